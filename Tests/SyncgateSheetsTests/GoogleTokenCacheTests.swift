import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing

@testable import SyncgateSheets

/// The disk cache of access tokens: its file's name, mode and content, and every file it must not trust.
@Suite("Google token cache")
struct GoogleTokenCacheTests {
    let dir: TemporaryDirectory
    let cache: GoogleTokenCache
    let identity = GoogleTokenFetcher.Credentials.metadataServer(baseURL: "http://127.0.0.1:9", lookedAt: []).identity
    let scope = OAuthTokenProvider.scope
    let now = Date()

    init() throws {
        dir = try TemporaryDirectory("sg-token-cache")
        cache = GoogleTokenCache(stateDirectory: dir.path)
    }

    func token(_ value: String = "ya29.cached-\(UUID().uuidString)", lifetime: TimeInterval = 3600) -> AccessToken {
        AccessToken(value: Secret(value), lifetime: lifetime, issuedAt: now)
    }

    func mode(_ path: String) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
    }

    @Test func roundTripInAPrivateFileNamedByADigest() throws {
        defer { dir.remove() }
        let stored = token()
        #expect(cache.write(stored, identity: identity, scope: scope) == nil)
        let file = cache.path(identity: identity, scope: scope)
        #expect(file.hasPrefix(dir.file("google-tokens").path + "/token-") && file.hasSuffix(".json"))
        #expect(try mode(file) == 0o600)
        #expect(try mode(dir.file("google-tokens").path) == 0o700)
        // Only the file itself: the temporary one was renamed over it.
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.file("google-tokens").path).count == 1)
        let read = try #require(cache.read(identity: identity, scope: scope, now: now))
        #expect(read.value == stored.value)
        #expect(abs(read.refreshAt.timeIntervalSince(stored.refreshAt)) < 1)
        #expect(abs(read.expiresAt.timeIntervalSince(now.addingTimeInterval(3600))) < 1)
        // Used until the refresh margin (a minute before expiry), not after.
        #expect(cache.read(identity: identity, scope: scope, now: now.addingTimeInterval(3530)) != nil)
        #expect(cache.read(identity: identity, scope: scope, now: now.addingTimeInterval(3541)) == nil)
        // Another identity or scope is another file, and finds nothing.
        #expect(cache.read(identity: identity + "x", scope: scope, now: now) == nil)
        #expect(cache.read(identity: identity, scope: scope + ".readonly", now: now) == nil)
        #expect(cache.path(identity: identity, scope: scope + ".readonly") != file)
        // A token read back is a registered secret.
        #expect(Redactor.shared.redact(read.value.reveal()) == "<redacted>")
    }

    @Test func theNameHoldsNoSecret() throws {
        defer { dir.remove() }
        let refresh = "1//refresh-\(UUID().uuidString)"
        let user = try AuthorizedUserCredentials(
            fields: ["client_id": "client-\(UUID().uuidString)", "client_secret": "cs-\(UUID().uuidString)", "refresh_token": refresh], source: "adc.json")
        let credentials = GoogleTokenFetcher.Credentials.authorizedUser(user, path: "adc.json")
        let file = cache.path(identity: credentials.identity, scope: scope)
        let name = (file as NSString).lastPathComponent
        #expect(name.count == "token-".count + 32 + ".json".count)
        #expect(!name.contains(refresh) && !name.contains(user.clientID) && !credentials.identity.contains(refresh))
        // A new login (another refresh token for the same OAuth client) is another identity.
        let other = try AuthorizedUserCredentials(
            fields: ["client_id": user.clientID, "client_secret": user.clientSecret.reveal(), "refresh_token": refresh + "2"], source: "adc.json")
        #expect(GoogleTokenFetcher.Credentials.authorizedUser(other, path: "adc.json").identity != credentials.identity)
        #expect(cache.write(token(), identity: credentials.identity, scope: scope) == nil)
        let text = try String(contentsOfFile: file, encoding: .utf8)
        #expect(!text.contains(refresh) && !text.contains(user.clientSecret.reveal()))
    }

    @Test func untrustworthyFilesAreIgnoredAndReplaced() throws {
        defer { dir.remove() }
        let file = cache.path(identity: identity, scope: scope)
        #expect(cache.write(token(), identity: identity, scope: scope) == nil)

        // Readable by the group or others: ignored, and the next write makes it private again.
        #expect(chmod(file, 0o640) == 0)
        #expect(cache.read(identity: identity, scope: scope, now: now) == nil)
        let fresh = token()
        #expect(cache.write(fresh, identity: identity, scope: scope) == nil)
        #expect(try mode(file) == 0o600)
        #expect(cache.read(identity: identity, scope: scope, now: now)?.value == fresh.value)

        // Corrupt (a torn write, another program's file): ignored.
        for junk in ["", "{", "[]", #"{"version": 2}"#, String(repeating: "x", count: 70_000)] {
            try Data(junk.utf8).write(to: URL(fileURLWithPath: file))
            #expect(chmod(file, 0o600) == 0)
            #expect(cache.read(identity: identity, scope: scope, now: now) == nil, "\(junk.prefix(20))")
        }
        // Another identity's token copied under this name: its key does not match.
        let otherCache = GoogleTokenCache(stateDirectory: dir.file("other").path)
        try FileManager.default.createDirectory(at: dir.file("other"), withIntermediateDirectories: true)
        #expect(otherCache.write(token(), identity: identity + "-other", scope: scope) == nil)
        try FileManager.default.removeItem(atPath: file)
        try FileManager.default.copyItem(atPath: otherCache.path(identity: identity + "-other", scope: scope), toPath: file)
        #expect(cache.read(identity: identity, scope: scope, now: now) == nil)
        // Expired, or claiming a life no Google token has: ignored.
        #expect(cache.write(token(lifetime: 30), identity: identity, scope: scope) == nil)
        #expect(cache.read(identity: identity, scope: scope, now: now.addingTimeInterval(20)) == nil)
        #expect(cache.write(token(lifetime: 7 * 24 * 3600), identity: identity, scope: scope) == nil)
        #expect(cache.read(identity: identity, scope: scope, now: now) == nil)
        // A link to a private file is not followed.
        let target = cache.path(identity: identity + "-target", scope: scope)
        #expect(cache.write(token(), identity: identity + "-target", scope: scope) == nil)
        try FileManager.default.removeItem(atPath: file)
        try FileManager.default.createSymbolicLink(atPath: file, withDestinationPath: target)
        #expect(cache.read(identity: identity, scope: scope, now: now) == nil)
        // Replaced by a write all the same (rename over the link).
        #expect(cache.write(fresh, identity: identity, scope: scope) == nil)
        #expect(cache.read(identity: identity, scope: scope, now: now)?.value == fresh.value)
    }

    @Test(.enabled(if: getuid() == 0, "needs root to give a file to another user"))
    func anotherUsersFileIsIgnoredAndReplaced() throws {
        defer { dir.remove() }
        let file = cache.path(identity: identity, scope: scope)
        #expect(cache.write(token(), identity: identity, scope: scope) == nil)
        #expect(chown(file, 65534, 65534) == 0)  // nobody's, with a private mode
        #expect(cache.read(identity: identity, scope: scope, now: now) == nil)
        let fresh = token()
        #expect(cache.write(fresh, identity: identity, scope: scope) == nil)
        var info = stat()
        #expect(stat(file, &info) == 0 && info.st_uid == geteuid())
        #expect(cache.read(identity: identity, scope: scope, now: now)?.value == fresh.value)
    }

    @Test func removeTakesOnlyTheRefusedToken() throws {
        defer { dir.remove() }
        let stored = token()
        #expect(cache.write(stored, identity: identity, scope: scope) == nil)
        cache.remove(token(), identity: identity, scope: scope)  // another token: the file stays
        #expect(cache.read(identity: identity, scope: scope, now: now)?.value == stored.value)
        cache.remove(stored, identity: identity, scope: scope)
        #expect(!FileManager.default.fileExists(atPath: cache.path(identity: identity, scope: scope)))
    }

    @Test func aStateFolderNotThereYetIsNotCreated() {
        let missing = GoogleTokenCache(stateDirectory: dir.file("no/such/state").path)
        defer { dir.remove() }
        let problem = missing.write(token(), identity: identity, scope: scope)
        #expect(problem?.contains("cannot create") == true)
        #expect(!FileManager.default.fileExists(atPath: dir.file("no").path))
    }
}
