import Foundation
import SyncgateNetwork
import SyncgateTestSupport
import Testing

/// Which CA bundle a destination trusts (`ca_file` > `AWS_CA_BUNDLE` for S3 > `SSL_CERT_FILE` > the system), and
/// how a bundle that cannot be used is refused; the settings fingerprint follows the proxy and the bundle.
@Suite(
    "CA trust", .enabled(if: TestCertificateAuthority.unavailableReason == nil || TestPaths.serversRequired, "needs openssl"))
struct TLSTrustTests {
    @Test func precedence() async throws {
        let first = try await TestCertificateAuthority(name: "first")
        defer { first.remove() }
        let second = try await TestCertificateAuthority(name: "second")
        defer { second.remove() }
        let third = try await TestCertificateAuthority(name: "third")
        defer { third.remove() }
        let env = ["AWS_CA_BUNDLE": second.certificate.path, "SSL_CERT_FILE": third.certificate.path]

        func origin(_ trust: TLSTrust) -> String? {
            if case .bundle(_, let origin) = trust { return origin }
            return nil
        }
        #expect(origin(try TLSTrust.resolve(caFile: first.certificate.path, environment: env, awsCABundle: true)) == "ca_file")
        #expect(origin(try TLSTrust.resolve(caFile: nil, environment: env, awsCABundle: true)) == "AWS_CA_BUNDLE")
        #expect(origin(try TLSTrust.resolve(caFile: nil, environment: env, awsCABundle: false)) == "SSL_CERT_FILE", "AWS_CA_BUNDLE is for S3 only")
        #expect(try TLSTrust.resolve(caFile: nil, environment: ["AWS_CA_BUNDLE": "", "SSL_CERT_FILE": ""], awsCABundle: true) == .system)
        #expect(try TLSTrust.resolve(caFile: nil, environment: [:], awsCABundle: true) == .system)
        if case .bundle(let bundle, _) = try TLSTrust.resolve(caFile: first.certificate.path, environment: [:], awsCABundle: true) {
            #expect(bundle.certificates.count == 1)
        } else {
            Issue.record("ca_file was not used")
        }
    }

    @Test func unusableBundlesAreRefusedNamingTheFile() async throws {
        let dir = try TemporaryDirectory("ca-bad")
        defer { dir.remove() }
        let notPEM = try dir.write("not.pem", "just text\n")
        let brokenPEM = try dir.write("broken.pem", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
        let cases: [(String?, [String: String], String)] = [
            (dir.file("missing.pem").path, [:], "does not exist"),
            (dir.path, [:], "is a folder"),
            (notPEM.path, [:], "holds no PEM certificate"),
            (brokenPEM.path, [:], "not a valid PEM"),
            (nil, ["AWS_CA_BUNDLE": dir.file("gone.pem").path], "AWS_CA_BUNDLE"),
            (nil, ["SSL_CERT_FILE": dir.file("gone.pem").path], "SSL_CERT_FILE"),
        ]
        for (caFile, env, expected) in cases {
            do {
                _ = try TLSTrust.resolve(caFile: caFile, environment: env, awsCABundle: true)
                Issue.record("\(caFile ?? "\(env)") was accepted")
            } catch {
                #expect(error.key == "ca_file")
                #expect(error.message.contains(expected), "\(error.message)")
                #expect(error.message.contains(caFile ?? env.values.first!), "the message names the file: \(error.message)")
            }
        }
    }

    @Test func fingerprintFollowsTheBundleAndTheProxy() async throws {
        let ca = try await TestCertificateAuthority()
        defer { ca.remove() }
        let other = try await TestCertificateAuthority()
        defer { other.remove() }
        let dir = try TemporaryDirectory("ca-fp")
        defer { dir.remove() }
        let file = dir.file("bundle.pem")
        try FileManager.default.copyItem(at: ca.certificate, to: file)
        func fingerprint(_ env: [String: String], caFile: String? = nil) throws -> String {
            try NetworkSettings.resolve(NetworkConfig(), caFile: caFile, environment: env, awsCABundle: true).fingerprint
        }
        #expect(try fingerprint([:]) == "", "nothing set: nothing added to a destination's fingerprint")
        let before = try fingerprint([:], caFile: file.path)
        #expect(!before.isEmpty)
        #expect(try fingerprint([:], caFile: file.path) == before, "the same bundle, the same fingerprint")
        try FileManager.default.removeItem(at: file)
        try FileManager.default.copyItem(at: other.certificate, to: file)
        #expect(try fingerprint([:], caFile: file.path) != before, "a bundle with another CA at the same path is a settings change")

        let proxied = try fingerprint(["HTTPS_PROXY": "http://u:first-password@proxy:3128"])
        #expect(try fingerprint(["HTTPS_PROXY": "http://u:second-password@proxy:3128"]) != proxied, "a new proxy password is a change")
        #expect(try fingerprint(["HTTPS_PROXY": "http://u:first-password@proxy:3128", "NO_PROXY": "a.test"]) != proxied)
        #expect(!proxied.contains("first-password"))
    }

    @Test func hintNamesTheCertificateProblem() {
        struct FakeHandshake: Error, CustomStringConvertible {
            var description = "handshakeFailed(NIOSSL.BoringSSLError.sslError([Error: 268435581 error:1000007d:SSL routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED]))"
        }
        let text = TLSFailureHint.text(for: FakeHandshake(), trust: .system, keys: "ca_file or SSL_CERT_FILE")
        #expect(text?.contains("not signed by a CA trusted here") == true)
        #expect(text?.contains("the system's CA store") == true)
        #expect(text?.contains("ca_file or SSL_CERT_FILE") == true)
    }
}
