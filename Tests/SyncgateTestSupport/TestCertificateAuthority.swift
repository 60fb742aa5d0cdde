import Foundation

/// A throwaway certificate authority made with openssl when a test starts (nothing is committed as a fixed key):
/// a self-signed CA (P-256) and server certificates it signs for the names a test asks for. Its files live in a
/// temporary folder; ``remove()`` deletes them.
public final class TestCertificateAuthority: Sendable {
    public let directory: TemporaryDirectory
    /// The CA's certificate (PEM): what a client is told to trust.
    public let certificate: URL
    private let key: URL
    private let openssl: URL

    /// Why openssl cannot be used here, or nil.
    public static let unavailableReason: String? = {
        ProcessRunner.which("openssl") == nil ? "openssl is not installed (scripts/test-deps.d/network.sh installs it)" : nil
    }()

    /// A server certificate and its key (PEM), signed by the CA.
    public struct Issued: Sendable {
        public var certificate: URL
        public var key: URL
    }

    public init(name: String = "syncgate test CA") async throws {
        guard let openssl = ProcessRunner.which("openssl") else { throw TestCertificateAuthorityError("openssl is not installed") }
        self.openssl = openssl
        directory = try TemporaryDirectory("test-ca")
        certificate = directory.file("ca.pem")
        key = directory.file("ca.key")
        let config = try directory.write("ca.cnf", """
            [req]
            distinguished_name = dn
            prompt = no
            x509_extensions = v3_ca
            [dn]
            CN = \(name) \(UUID().uuidString.prefix(8))
            [v3_ca]
            basicConstraints = critical, CA:TRUE
            keyUsage = critical, keyCertSign, cRLSign
            subjectKeyIdentifier = hash

            """)
        try await run([
            "req", "-x509", "-config", config.path, "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", key.path, "-out", certificate.path, "-days", "2",
        ])
    }

    /// A certificate for `hosts` (names and IP addresses, all in its subjectAltName), valid for two days.
    public func issue(hosts: [String], name: String = "server") async throws -> Issued {
        let keyFile = directory.file("\(name).key")
        let request = directory.file("\(name).csr")
        let certificateFile = directory.file("\(name).pem")
        let names = hosts.map { host in
            host.allSatisfy({ $0.isNumber || $0 == "." }) || host.contains(":") ? "IP:\(host)" : "DNS:\(host)"
        }
        let extensions = try directory.write("\(name).ext", """
            basicConstraints = CA:FALSE
            keyUsage = critical, digitalSignature, keyEncipherment
            extendedKeyUsage = serverAuth
            subjectAltName = \(names.joined(separator: ", "))
            subjectKeyIdentifier = hash
            authorityKeyIdentifier = keyid

            """)
        try await run([
            "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", keyFile.path,
            "-out", request.path, "-subj", "/CN=\(hosts.first ?? "localhost")",
        ])
        try await run([
            "x509", "-req", "-in", request.path, "-CA", certificate.path, "-CAkey", key.path, "-CAcreateserial",
            "-out", certificateFile.path, "-days", "2", "-extfile", extensions.path,
        ])
        return Issued(certificate: certificateFile, key: keyFile)
    }

    private func run(_ arguments: [String]) async throws {
        let result = try await ProcessRunner.run(openssl, arguments, timeout: 60)
        guard result.status == 0 else {
            throw TestCertificateAuthorityError("openssl \(arguments.prefix(2).joined(separator: " ")) failed (\(result.status)): \(result.stderr.suffix(800))")
        }
    }

    public func remove() { directory.remove() }
}

public struct TestCertificateAuthorityError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
