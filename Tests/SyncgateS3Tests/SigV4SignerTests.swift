import Foundation
import SyncgateTestSupport
import Testing
@testable import SyncgateS3

/// The signer against the official AWS SigV4 test suite in `../shared/testdata/sigv4` (both forms), every case
/// that applies to S3 (the normalize-path ones do not: S3 never normalises a path).
@Suite("SigV4 signer: official test suite", .enabled(if: TestPaths.sharedDirectory != nil, "needs ../shared: the AWS SigV4 test vectors live in ../shared/testdata/sigv4"))
struct SigV4SignerTests {
    static let accessKey = "AKIDEXAMPLE"
    static let secretKey = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
    static let date = Date(timeIntervalSince1970: 1_440_938_160)  // 2015-08-30T12:36:00Z

    @Test func suiteDateIsTheVectorsDate() {
        #expect(SigV4Signer.amzDate(Self.date) == "20150830T123600Z")
    }

    /// The 2015-08-30 suite (botocore's copy): `.req` in; `.creq`, `.sts`, `.authz` out.
    @Test func botocoreSuite() throws {
        let root = try #require(TestPaths.shared("testdata/sigv4"))
        var folders: [URL] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: root.path).sorted() where name != "normalize-path" {
            let folder = root.appendingPathComponent(name)
            if FileManager.default.fileExists(atPath: folder.appendingPathComponent("\(name).req").path) {
                folders.append(folder)
            } else if let subs = try? FileManager.default.contentsOfDirectory(atPath: folder.path) {
                for sub in subs.sorted() {
                    let inner = folder.appendingPathComponent(sub)
                    if FileManager.default.fileExists(atPath: inner.appendingPathComponent("\(sub).req").path) { folders.append(inner) }
                }
            }
        }
        var checked = 0
        for folder in folders {
            let name = folder.lastPathComponent
            let file = { (ext: String) in folder.appendingPathComponent("\(name).\(ext)") }
            let text = try #require(SigV4SuiteCase.read(file("req")))
            let suiteCase = SigV4SuiteCase(name: name, requestText: text)
            let token = name == "get-vanilla-with-session-token"
                ? "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267" : nil
            let signer = SigV4Signer(
                credentials: SigV4Credentials(accessKeyID: Self.accessKey, secretAccessKey: Self.secretKey, sessionToken: token),
                region: "us-east-1", service: "service")
            let signature = signer.sign(suiteCase.request(dropping: ["x-amz-date"]), date: Self.date)
            #expect(signature.canonicalRequest == SigV4SuiteCase.trimmed(try #require(SigV4SuiteCase.read(file("creq")))), "\(name): canonical request")
            #expect(signature.stringToSign == SigV4SuiteCase.trimmed(try #require(SigV4SuiteCase.read(file("sts")))), "\(name): string to sign")
            #expect(signature.authorization == SigV4SuiteCase.trimmed(try #require(SigV4SuiteCase.read(file("authz")))), "\(name): Authorization")
            checked += 1
        }
        // 34 cases minus the 8 normalize-path ones (24 top-level + the two post-sts-token cases).
        #expect(checked == 26, "checked \(checked) cases")
    }

    /// The newer aws-c-auth form: header signing and presigned-URL (query) signing, with `context.json`.
    @Test func awsCAuthSuite() throws {
        let root = try #require(TestPaths.shared("testdata/sigv4/aws-c-auth-signing-test-suite/v4"))
        var headerCases = 0
        var queryCases = 0
        var skipped: [String] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: root.path).sorted() {
            let folder = root.appendingPathComponent(name)
            guard let contextText = SigV4SuiteCase.read(folder.appendingPathComponent("context.json")),
                let requestText = SigV4SuiteCase.read(folder.appendingPathComponent("request.txt"))
            else { continue }
            let context = try #require(try JSONSerialization.jsonObject(with: Data(contextText.utf8)) as? [String: Any])
            let credentials = try #require(context["credentials"] as? [String: String])
            let suiteCase = SigV4SuiteCase(name: name, requestText: requestText)
            let normalize = context["normalize"] as? Bool ?? true
            if normalize && suiteCase.pathNeedsNormalizing {
                skipped.append(name)
                continue
            }
            let omitToken = context["omit_session_token"] as? Bool ?? false
            let signer = SigV4Signer(
                credentials: SigV4Credentials(
                    accessKeyID: try #require(credentials["access_key_id"]),
                    secretAccessKey: try #require(credentials["secret_access_key"]), sessionToken: credentials["token"]),
                region: try #require(context["region"] as? String), service: try #require(context["service"] as? String))
            let expected = { (file: String) in SigV4SuiteCase.read(folder.appendingPathComponent(file)).map(SigV4SuiteCase.trimmed) }

            if let canonical = expected("header-canonical-request.txt") {
                var extra: [(name: String, value: String)] = []
                if context["sign_body"] as? Bool == true { extra.append(("x-amz-content-sha256", suiteCase.payloadHash)) }
                let signature = signer.sign(suiteCase.request(extraHeaders: extra), date: Self.date, signSessionToken: !omitToken)
                #expect(signature.canonicalRequest == canonical, "\(name): header canonical request")
                #expect(signature.stringToSign == expected("header-string-to-sign.txt"), "\(name): header string to sign")
                #expect(signature.signature == expected("header-signature.txt"), "\(name): header signature")
                if let signed = expected("header-signed-request.txt") {
                    #expect(signed.contains("Authorization:\(signature.authorization)"), "\(name): signed request's Authorization")
                }
                headerCases += 1
            }
            if let canonical = expected("query-canonical-request.txt") {
                let expires = context["expiration_in_seconds"] as? Int ?? 3600
                let presigned = signer.presign(suiteCase.request(), date: Self.date, expires: expires, signSessionToken: !omitToken)
                #expect(presigned.canonicalRequest == canonical, "\(name): query canonical request")
                #expect(presigned.stringToSign == expected("query-string-to-sign.txt"), "\(name): query string to sign")
                #expect(presigned.signature == expected("query-signature.txt"), "\(name): query signature")
                queryCases += 1
            }
        }
        // 38 cases minus the 6 whose path a normalising signer rewrites ("//", "." and ".." segments).
        #expect(headerCases == 32, "header cases checked: \(headerCases), skipped (need normalising): \(skipped)")
        #expect(queryCases == 32, "query cases checked: \(queryCases)")
        #expect(skipped.count == 6, "skipped: \(skipped)")
        // Exactly the cases whose path only a normalising signer would rewrite are skipped.
        #expect(skipped.allSatisfy { $0.hasSuffix("-normalized") }, "skipped: \(skipped)")
    }

    @Test func secretsNeverPrint() {
        let credentials = SigV4Credentials(accessKeyID: Self.accessKey, secretAccessKey: Self.secretKey, sessionToken: "token-value-123")
        let text = "\(credentials) \(String(reflecting: credentials))"
        #expect(!text.contains(Self.secretKey))
        #expect(!text.contains("token-value-123"))
    }
}
