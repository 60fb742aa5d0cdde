import Crypto
import Foundation
import NIOSSL
import Synchronization

/// A PEM file of CA certificates a destination trusts, read and checked when the config is loaded: a file that is
/// missing, not a regular file, larger than ``maxSize`` or without a single certificate is refused there, naming
/// the file. The same bytes are parsed once per process however many destinations name them (Debian's whole store,
/// 140 certificates, takes tens of milliseconds in a debug build).
public struct CABundle: Sendable, Hashable {
    public let path: String
    public let certificates: [NIOSSLCertificate]
    /// Hex SHA-256 of the file's bytes: a changed bundle is a settings change.
    public let sha256: String

    /// Larger than any real bundle (Debian's whole store is about 200 KiB).
    public static let maxSize = 16 << 20

    public struct LoadError: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    private init(path: String, certificates: [NIOSSLCertificate], sha256: String) {
        self.path = path
        self.certificates = certificates
        self.sha256 = sha256
    }

    /// Reads and parses the bundle at `path` (bytes parsed before in this process are not parsed again).
    public static func load(_ path: String) throws(LoadError) -> CABundle {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else {
            throw LoadError(description: "the CA bundle \(path) does not exist")
        }
        guard !isFolder.boolValue else {
            throw LoadError(description: "the CA bundle \(path) is a folder; give a PEM file of certificates")
        }
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        guard attributes?[.type] as? FileAttributeType == .typeRegular else {
            throw LoadError(description: "the CA bundle \(path) is not a regular file")
        }
        guard let size = attributes?[.size] as? Int, size <= CABundle.maxSize else {
            throw LoadError(description: "the CA bundle \(path) is larger than \(CABundle.maxSize >> 20) MiB")
        }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw LoadError(description: "the CA bundle \(path) cannot be read (permissions?)")
        }
        defer { try? handle.close() }
        let data: Data
        do {
            data = try handle.read(upToCount: CABundle.maxSize + 1) ?? Data()
        } catch {
            throw LoadError(description: "the CA bundle \(path) cannot be read: \(error.localizedDescription)")
        }
        guard data.count <= CABundle.maxSize else {
            throw LoadError(description: "the CA bundle \(path) is larger than \(CABundle.maxSize >> 20) MiB")
        }
        let bytes = Array(data)
        let sha256 = SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
        if let known = CABundle.parsed.withLock({ $0[sha256] }) { return CABundle(path: path, certificates: known, sha256: sha256) }
        guard String(decoding: bytes, as: UTF8.self).contains("-----BEGIN CERTIFICATE-----") else {
            throw LoadError(description: "the CA bundle \(path) holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
        }
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMBytes(bytes)
        } catch {
            throw LoadError(description: "the CA bundle \(path) is not a valid PEM file of certificates (\(error))")
        }
        guard !certificates.isEmpty else {
            throw LoadError(description: "the CA bundle \(path) holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
        }
        CABundle.parsed.withLock { $0[sha256] = certificates }
        return CABundle(path: path, certificates: certificates, sha256: sha256)
    }

    /// The certificates of the bundles parsed so far, by the SHA-256 of the file's bytes.
    private static let parsed = Mutex<[String: [NIOSSLCertificate]]>([:])

    public static func == (a: CABundle, b: CABundle) -> Bool { a.path == b.path && a.sha256 == b.sha256 }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(path)
        hasher.combine(sha256)
    }
}
