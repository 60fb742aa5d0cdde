import Foundation
import SyncgateTestSupport
import Testing

/// Every output of full runs, failures included, is searched for the secrets the config holds: the S3 secret key,
/// the Apps Script secret, the service account's private key (right and wrong ones).
@Suite("secrets never leak", .enabled(if: AllDestinations.shouldRun, "needs moto, the Sheets test server and the head-unit simulator"))
struct SecretsTests {
    @Test func noOutputLogStatusOrStateFileHoldsASecret() async throws {
        let all = try await AllDestinations(retries: 0)
        defer { all.stop() }
        try all.makeOutbox(binaries: 5, csvs: 3)
        let wrongS3 = "WrongSecretKey/\(UUID().uuidString)"
        let wrongApps = "wrong-apps-secret-\(UUID().uuidString.prefix(8))"
        let keyJSON = try JSONSerialization.jsonObject(with: try Data(contentsOf: all.sheets.keyFile)) as? [String: Any]
        let pem = try #require(keyJSON?["private_key"] as? String)
        let pemBody = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }
        let secrets = [all.s3.secretAccessKey, all.appsScriptSecret, wrongS3, wrongApps] + pemBody.prefix(6).map(String.init)

        var outputs: [(String, String)] = []
        func record(_ name: String, _ result: ProcessResult) { outputs.append((name, result.stdout + result.stderr)) }
        let wrong = ["TEST_S3_SECRET": wrongS3, "TEST_APPS_SCRIPT_SECRET": wrongApps]

        record("validate -vv", try await all.run(["validate", "-vv"]))
        record("sync --dry-run -vv", try await all.run(["sync", "--dry-run", "-vv"]))
        let failing = try await all.run(["sync", "--json", "-vv"], overriding: wrong)
        #expect(failing.status == 1, "wrong secrets must fail permanently: \(failing.stderr.suffix(1500))")
        record("failing sync --json -vv", failing)
        #expect(failing.stdout.contains("SignatureDoesNotMatch") || failing.stdout.contains("InvalidAccessKeyId"))
        #expect(failing.stdout.contains("bad secret"))
        record("status (failures)", try await all.run(["status", "-vv"], overriding: wrong))
        record("status --json (failures)", try await all.run(["status", "--json"], overriding: wrong))
        record("retry -vv", try await all.run(["retry", "--json", "-vv"]))
        record("sync -vv", try await all.run(["sync", "-vv"]))
        record("ls bucket -vv", try await all.run(["ls", "--destination", "bucket", "-vv"]))
        record("ls bucket with a wrong secret", try await all.run(["ls", "--destination", "bucket", "-vv"], overriding: wrong))
        record("status --json", try await all.run(["status", "--json"]))
        let final = try await all.status()
        #expect((final["destinations"] as? [[String: Any]])?.allSatisfy { $0["failed"] as? Int == 0 } == true, "\(final)")

        for file in [".syncgate/state.sqlite", ".syncgate/state.sqlite-wal"] where all.dir.exists(file) {
            let bytes = try all.dir.read(file)
            outputs.append((file, String(decoding: bytes, as: UTF8.self)))
        }
        #expect(outputs.count >= 11)
        for (name, text) in outputs {
            for secret in secrets {
                #expect(!text.contains(secret), "\(name) holds a secret (\(secret.prefix(4))...)")
            }
        }
    }
}
