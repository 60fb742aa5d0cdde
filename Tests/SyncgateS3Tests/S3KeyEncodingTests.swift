import Foundation
import SyncgateTestSupport
import Testing
@testable import SyncgateS3

/// S3 key encoding for the awkward alphabet: every byte outside `A-Z a-z 0-9 - . _ ~` (and `/` in paths) is
/// `%XX`, once; paths are never normalised; and the signature of such keys matches botocore's, an independent
/// SigV4 implementation.
@Suite("S3 key encoding")
struct S3KeyEncodingTests {
    static let awkwardKeys = [
        "plain.txt", "with space.txt", "plus+sign", "equals=sign", "amp&ersand", "bang!", "quote'd", "(paren)",
        "star*", "dollar$", "at@", "comma,", "semi;colon", "colon:", "percent%20literal", "[brackets]", "tilde~",
        "hash#", "question?", "ünïcödé/日本語/😀.bin", "e\u{301}-nfd", "dir//double/./dot/../up", "a/b/c/",
        "all + = & ! ' ( ) * $ @ , ; : % [ ] ~",
    ]

    @Test func literalEncodings() {
        #expect(S3URIEncoding.encode("a b+c=d&e") == "a%20b%2Bc%3Dd%26e")
        #expect(S3URIEncoding.encode("!'()*$@,;:%[]") == "%21%27%28%29%2A%24%40%2C%3B%3A%25%5B%5D")
        #expect(S3URIEncoding.encode("-._~AZaz09") == "-._~AZaz09")
        #expect(S3URIEncoding.encode("ü") == "%C3%BC")
        #expect(S3URIEncoding.encode("😀") == "%F0%9F%98%80")
        #expect(S3URIEncoding.encode("a/b") == "a%2Fb")
        #expect(S3URIEncoding.encode("a/b", keepSlash: true) == "a/b")
        // Never normalised: dots and double slashes stay.
        #expect(S3URIEncoding.objectPath(bucket: "bkt", key: "x//y/./z/../w") == "/bkt/x//y/./z/../w")
        #expect(S3URIEncoding.objectPath(bucket: nil, key: "percent%20") == "/percent%2520")
    }

    @Test(arguments: awkwardKeys)
    func encodesOnceAndRoundTrips(key: String) {
        let encoded = S3URIEncoding.encode(key, keepSlash: true)
        #expect(S3URIEncoding.decode(encoded) == key)
        // Only unreserved characters, '/', and %XX with upper-case hex remain.
        var index = encoded.startIndex
        while index < encoded.endIndex {
            let character = encoded[index]
            if character == "%" {
                let hex = encoded[encoded.index(after: index)..<encoded.index(index, offsetBy: 3)]
                #expect(hex.allSatisfy { $0.isHexDigit && !$0.isLowercase }, "\(key): \(encoded)")
                index = encoded.index(index, offsetBy: 3)
            } else {
                #expect(character.isASCII && (character.isLetter || character.isNumber || "-._~/".contains(character)), "\(key): \(encoded)")
                index = encoded.index(after: index)
            }
        }
    }

    @Test func listingDecodeTreatsPlusAsSpace() {
        #expect(S3URIEncoding.decode("a+b%2Bc%20d", plusIsSpace: true) == "a b+c d")
        #expect(S3URIEncoding.decode("100%", plusIsSpace: true) == "100%")
    }

    /// botocore (pip) signs the same PUT of every awkward key; the Authorization headers must be equal.
    @Test(.enabled(if: S3KeyEncodingTests.botocoreAvailable || TestPaths.serversRequired, "needs python3 with botocore (scripts/test-deps.d/s3.sh)"))
    func signaturesMatchBotocore() async throws {
        let python = try #require(ProcessRunner.which("python3"))
        let keysJSON = String(decoding: try JSONSerialization.data(withJSONObject: Self.awkwardKeys), as: UTF8.self)
        let result = try await ProcessRunner.run(python, ["-c", Self.botocoreScript, keysJSON], timeout: 60)
        try #require(result.status == 0, "botocore script failed: \(result.stderr)")
        let answers = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: String]])
        #expect(answers.count == Self.awkwardKeys.count)
        let settings = S3Settings(
            endpoint: URL(string: "http://127.0.0.1:9000")!, region: "eu-west-1", bucket: "bkt", pathStyle: true,
            credentials: SigV4Credentials(accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", sessionToken: "SESSIONTOKEN"))
        let signer = SigV4Signer(credentials: try #require(settings.credentials), region: "eu-west-1", service: "s3")
        let body = Data("hello world".utf8)
        let hash = SigV4Signer.hexSHA256(body)
        for answer in answers {
            let key = try #require(answer["key"])
            let request = SigV4Signer.Request(
                method: "PUT", path: settings.path(key: key),
                query: [],
                headers: [
                    ("Host", settings.hostHeader), ("Content-Length", "11"), ("Content-MD5", "XrY7u+Ae7tCTyyK7j1rNww=="),
                    ("x-amz-meta-sha256", hash), ("x-amz-content-sha256", hash),
                ],
                payloadHash: hash)
            let signature = signer.sign(request, date: Date(timeIntervalSince1970: 1_440_938_160))
            #expect(signature.canonicalRequest == answer["canonical"], "\(key)")
            #expect(signature.authorization == answer["authorization"], "\(key)")
        }
    }

    static let botocoreAvailable: Bool = {
        ProcessRunner.pythonHas(["botocore"])
    }()

    static let botocoreScript = #"""
import datetime, hashlib, json, sys, urllib.parse
import botocore.auth
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

fixed = datetime.datetime(2015, 8, 30, 12, 36, 0, tzinfo=datetime.timezone.utc)
botocore.auth.get_current_datetime = lambda *a, **k: fixed
auth = S3SigV4Auth(Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "SESSIONTOKEN"), "s3", "eu-west-1")
out = []
for key in json.loads(sys.argv[1]):
    url = "http://127.0.0.1:9000/bkt/" + urllib.parse.quote(key.encode("utf-8"), safe="/~")
    body = b"hello world"
    sha = hashlib.sha256(body).hexdigest()
    request = AWSRequest(method="PUT", url=url, data=body, headers={
        "Content-Length": "11", "Content-MD5": "XrY7u+Ae7tCTyyK7j1rNww==", "x-amz-meta-sha256": sha})
    auth.add_auth(request)
    authorization = request.headers["Authorization"]
    del request.headers["Authorization"]
    out.append({"key": key, "authorization": authorization, "canonical": auth.canonical_request(request)})
print(json.dumps(out))
"""#
}
