import Crypto
import Foundation
import SyncgateCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Access tokens kept on disk between runs, so that a cron job does not exchange a token every run: one file per
/// identity and scope in `google-tokens/` of the state folder (next to the ledger; under systemd's
/// `ProtectSystem=strict` that is the folder the service may write anyway), named by a digest (never by an
/// account, a key or a refresh token).
///
/// - Written atomically (a new file created with mode 0600 in the same folder, then renamed over the old one),
///   the folder created with mode 0700.
/// - Read at the first token of a run and used until its refresh time (the in-memory rule: a minute, or half the
///   lifetime of a short-lived token, before it expires).
/// - Ignored, and replaced by the next exchange, when it is not a regular file owned by this user with no access for
///   group or others, is larger than a token file can be, is not the JSON written here, is for another identity,
///   or has expired.
/// - Removed when the API refuses its token (401).
///
/// The file holds the access token (a secret, like the ledger's neighbours); it is registered with the redactor when
/// read, so it never reaches a log, an error or `status`.
struct GoogleTokenCache: Sendable {
    /// The folder of the token files.
    let directory: String

    static let folderName = "google-tokens"
    static let maximumFileSize = 64 << 10
    /// A cached token claiming a longer remaining life than this is not one Google issued: ignored.
    static let maximumLifetime: TimeInterval = 24 * 3600

    init(directory: String) { self.directory = directory }

    /// The cache in the state folder `stateDirectory`.
    init(stateDirectory: String) {
        directory = (stateDirectory as NSString).appendingPathComponent(GoogleTokenCache.folderName)
    }

    /// The file of a token for `identity` (``GoogleTokenFetcher/Credentials/identity``) and `scope`.
    func path(identity: String, scope: String) -> String {
        (directory as NSString).appendingPathComponent("token-" + GoogleTokenCache.key(identity: identity, scope: scope).prefix(32) + ".json")
    }

    static func key(identity: String, scope: String) -> String {
        GoogleCredentialSource.hex(SHA256.hash(data: Data("syncgate-google-token-v1\u{0}\(identity)\u{0}\(scope)".utf8)))
    }

    // MARK: Reading

    /// The cached token for `identity` and `scope`, when there is a usable one at `now`.
    func read(identity: String, scope: String, now: Date) -> AccessToken? {
        let file = path(identity: identity, scope: scope)
        guard let data = GoogleTokenCache.readOwnPrivateFile(file),
            let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
            object["version"] as? Int == 1,
            object["key"] as? String == GoogleTokenCache.key(identity: identity, scope: scope),
            let value = object["access_token"] as? String, !value.isEmpty,
            let expires = (object["expires_at"] as? NSNumber)?.doubleValue,
            let refresh = (object["refresh_at"] as? NSNumber)?.doubleValue
        else { return nil }
        let expiresAt = Date(timeIntervalSince1970: expires)
        let refreshAt = Date(timeIntervalSince1970: min(refresh, expires))
        guard now < refreshAt, expiresAt.timeIntervalSince(now) <= GoogleTokenCache.maximumLifetime else { return nil }
        return AccessToken(value: Secret(value), expiresAt: expiresAt, refreshAt: refreshAt)
    }

    /// The bytes of `file` when it is a regular file (not a link) owned by this user, with no permission for group
    /// or others, and small; nil otherwise (or when it is not there).
    static func readOwnPrivateFile(_ file: String) -> Data? {
        let fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_uid == geteuid(),
            info.st_mode & 0o077 == 0, info.st_size <= maximumFileSize
        else { return nil }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while data.count <= maximumFileSize {
            let n = systemRead(fd, &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            data.append(contentsOf: buffer[0..<n])
        }
        return data.count <= maximumFileSize ? data : nil
    }

    // MARK: Writing

    /// Stores `token` for `identity` and `scope`. Errors are returned for a debug log: a cache that cannot be written
    /// costs one exchange per run, nothing else.
    @discardableResult
    func write(_ token: AccessToken, identity: String, scope: String) -> String? {
        if let problem = prepareDirectory() { return problem }
        let object: [String: Any] = [
            "version": 1, "key": GoogleTokenCache.key(identity: identity, scope: scope), "access_token": token.value.reveal(),
            "expires_at": token.expiresAt.timeIntervalSince1970.rounded(.down), "refresh_at": token.refreshAt.timeIntervalSince1970.rounded(.down),
        ]
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return "cannot encode the token" }
        let file = path(identity: identity, scope: scope)
        let temporary = file + ".tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return "cannot create \(temporary): \(String(cString: strerror(errno)))" }
        var failure: String?
        if fchmod(fd, 0o600) != 0 { failure = "cannot set the mode of \(temporary)" }
        if failure == nil {
            let written = data.withUnsafeBytes { raw -> Int in
                var sent = 0
                while sent < raw.count {
                    let n = systemWrite(fd, raw.baseAddress! + sent, raw.count - sent)
                    if n < 0 && errno == EINTR { continue }
                    guard n > 0 else { return -1 }
                    sent += n
                }
                return sent
            }
            if written != data.count { failure = "cannot write \(temporary): \(String(cString: strerror(errno)))" }
        }
        close(fd)
        if failure == nil, rename(temporary, file) != 0 { failure = "cannot rename \(temporary) to \(file): \(String(cString: strerror(errno)))" }
        if failure != nil { unlink(temporary) }
        return failure
    }

    /// Removes the cached token for `identity` and `scope` when it is `token` (the API refused it).
    func remove(_ token: AccessToken, identity: String, scope: String) {
        let file = path(identity: identity, scope: scope)
        guard let data = GoogleTokenCache.readOwnPrivateFile(file),
            let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
            object["access_token"] as? String == token.value.reveal()
        else { return }
        unlink(file)
    }

    /// Creates the folder (mode 0700) when it is missing; its parent, the state folder, must exist. Returns why it
    /// cannot be used: not a folder, a link, another user's.
    private func prepareDirectory() -> String? {
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            return "cannot create \(directory): \(String(cString: strerror(errno)))"
        }
        var info = stat()
        guard lstat(directory, &info) == 0 else { return "cannot read \(directory)" }
        guard (info.st_mode & S_IFMT) == S_IFDIR else { return "\(directory) is not a folder" }
        guard info.st_uid == geteuid() else { return "\(directory) belongs to another user" }
        return nil
    }
}

// The C library's read and write, which the cache's own methods of those names hide inside it.
private func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int { read(fd, buffer, count) }
private func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int { write(fd, buffer, count) }
