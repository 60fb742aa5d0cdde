import Crypto
import Foundation
import SyncgateCore
import Testing
import _CryptoExtras

@testable import SyncgateSheets

@Suite("JWT RS256 signing and service-account keys")
struct JWTSignerTests {
    static let key = try! _RSA.Signing.PrivateKey(keySize: .bits2048)

    func decodeJSON(_ segment: Substring) throws -> [String: Any] {
        let data = try #require(JWTSigner.base64URLDecode(segment))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test func assertionHasGoogleClaimsAndAVerifiableSignature() throws {
        let signer = try JWTSigner(pem: Self.key.pemRepresentation, keyID: "kid-123")
        let issued = Date(timeIntervalSince1970: 1_700_000_000)
        let jwt = try signer.assertion(
            issuer: "sa@project.iam.gserviceaccount.com", scope: "https://www.googleapis.com/auth/spreadsheets",
            audience: "https://oauth2.googleapis.com/token", issuedAt: issued)
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        #expect(parts.count == 3)
        #expect(!jwt.contains("=") && !jwt.contains("+") && !jwt.contains("/"))
        let header = try decodeJSON(parts[0])
        #expect(header["alg"] as? String == "RS256")
        #expect(header["typ"] as? String == "JWT")
        #expect(header["kid"] as? String == "kid-123")
        let claims = try decodeJSON(parts[1])
        #expect(claims["iss"] as? String == "sa@project.iam.gserviceaccount.com")
        #expect(claims["scope"] as? String == "https://www.googleapis.com/auth/spreadsheets")
        #expect(claims["aud"] as? String == "https://oauth2.googleapis.com/token")
        #expect((claims["iat"] as? NSNumber)?.intValue == 1_700_000_000)
        #expect((claims["exp"] as? NSNumber)?.intValue == 1_700_003_600)

        let signature = try #require(JWTSigner.base64URLDecode(parts[2]))
        #expect(signature.count == 256)
        let input = Array("\(parts[0]).\(parts[1])".utf8)
        let publicKey = Self.key.publicKey
        #expect(publicKey.isValidSignature(.init(rawRepresentation: signature), for: SHA256.hash(data: input), padding: .insecurePKCS1v1_5))
        // Not PSS: a PSS verifier must refuse it, and a tampered input must fail.
        #expect(!publicKey.isValidSignature(.init(rawRepresentation: signature), for: SHA256.hash(data: input), padding: .PSS))
        var tampered = input
        tampered[tampered.count - 1] ^= 1
        #expect(!publicKey.isValidSignature(.init(rawRepresentation: signature), for: SHA256.hash(data: tampered), padding: .insecurePKCS1v1_5))
    }

    @Test func pkcs1v15SignaturesAreDeterministic() throws {
        let signer = try JWTSigner(pem: Self.key.pemRepresentation, keyID: nil)
        let a = try signer.sign(header: "{\"alg\":\"RS256\"}", claims: "{\"iss\":\"joe\"}")
        let b = try signer.sign(header: "{\"alg\":\"RS256\"}", claims: "{\"iss\":\"joe\"}")
        #expect(a == b)
        #expect(a.hasPrefix("eyJhbGciOiJSUzI1NiJ9."))  // RFC 7515 A.2's encoding of {"alg":"RS256"}
        // Lifetime is capped at the one hour Google allows.
        let jwt = try signer.assertion(issuer: "i", scope: "s", audience: "a", issuedAt: Date(timeIntervalSince1970: 100), lifetime: 7200)
        let claims = try decodeJSON(jwt.split(separator: ".")[1])
        #expect((claims["exp"] as? NSNumber)?.intValue == 3700)
    }

    @Test func base64URLRoundTrips() {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 250) }
            let encoded = JWTSigner.base64URL(bytes)
            #expect(JWTSigner.base64URLDecode(encoded) == Data(bytes))
        }
    }

    @Test func unreadableKeyIsRefusedWithoutQuotingIt() {
        let bogus = "-----BEGIN PRIVATE KEY-----\nTk9UQUtFWQ==\n-----END PRIVATE KEY-----\n"
        #expect(throws: JWTSignerError.self) { try JWTSigner(pem: bogus, keyID: nil) }
        let message = String(describing: JWTSignerError.unreadableKey)
        #expect(!message.contains("Tk9UQUtFWQ"))
    }

    @Test func serviceAccountKeyFileIsCheckedAndItsKeyRedacted() throws {
        let pem = Self.key.pemRepresentation
        let json: [String: Any] = [
            "type": "service_account", "private_key_id": "abc", "private_key": pem,
            "client_email": "sa@p.iam.gserviceaccount.com", "token_uri": "http://127.0.0.1:1/token",
        ]
        let key = try ServiceAccountKey(json: try JSONSerialization.data(withJSONObject: json))
        #expect(key.clientEmail == "sa@p.iam.gserviceaccount.com")
        #expect(key.privateKeyID == "abc")
        #expect(key.tokenURI == "http://127.0.0.1:1/token")
        #expect("\(key.privateKey)" == "<redacted>")
        // The key is scrubbed from any text that leaves the process.
        let leaked = "oops: \(pem.trimmingCharacters(in: .whitespacesAndNewlines))"
        #expect(!Redactor.shared.redact(leaked).contains("PRIVATE KEY-----\n"))

        var missing = json
        missing["client_email"] = nil
        let error = #expect(throws: DestinationError.self) {
            try ServiceAccountKey(json: try JSONSerialization.data(withJSONObject: missing), source: "key.json")
        }
        #expect(error?.message == "key.json has no client_email")
        #expect(error?.failureClass == .permanent)

        var user = json
        user["type"] = "authorized_user"
        let wrongType = #expect(throws: DestinationError.self) {
            try ServiceAccountKey(json: try JSONSerialization.data(withJSONObject: user), source: "key.json")
        }
        #expect(wrongType?.message.contains("authorized_user") == true)
        #expect(wrongType?.message.contains("BEGIN") == false)
        #expect(throws: DestinationError.self) { try ServiceAccountKey(json: Data("not json".utf8)) }
    }

    @Test func a1RangesAddressTheKeyColumn() throws {
        #expect(try A1Range(parsing: "Builds!A:H").column(at: 2) == "Builds!C:C")
        #expect(try A1Range(parsing: "Sheet1").column(at: 0) == "Sheet1!A:A")
        #expect(try A1Range(parsing: "'My sheet'!B2:F").column(at: 1) == "'My sheet'!C:C")
        #expect(try A1Range(parsing: "'It''s'!Z1").column(at: 1) == "'It''s'!AA:AA")
        #expect(try A1Range(parsing: "D:H").column(at: 0) == "D:D")
        #expect(A1Range.columnLetters(701) == "ZZ")
        #expect(A1Range.columnIndex("AAA") == 702)
        #expect(throws: A1Range.ParseError.self) { try A1Range(parsing: "'unclosed!A:B") }
        #expect(throws: A1Range.ParseError.self) { try A1Range(parsing: "Sheet!A1:B2:C3") }
        #expect(throws: A1Range.ParseError.self) { try A1Range(parsing: "!A:B") }
    }

    @Test func rangesArePercentEncodedAsOnePathSegment() {
        #expect(SheetsClient.pathSegment("'My sheet'!A:H") == "%27My%20sheet%27%21A%3AH")
        #expect(SheetsClient.pathSegment("abc-_.~") == "abc-_.~")
    }
}
