import Crypto
import Foundation
import SyncgateJSON
import _CryptoExtras

/// Builds and signs the JWT a service account exchanges for an access token (RFC 7519 / RFC 7515, RS256 =
/// RSASSA-PKCS1-v1_5 with SHA-256). Pure: no clock, no I/O; the caller passes the time.
public struct JWTSigner: Sendable {
    private let key: _RSA.Signing.PrivateKey
    public let keyID: String?

    /// `pem` is the key file's `private_key` (PKCS#8 `BEGIN PRIVATE KEY`, or PKCS#1 `BEGIN RSA PRIVATE KEY`).
    public init(pem: String, keyID: String?) throws {
        do {
            key = try _RSA.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            // Never quote the key: say only what is wrong with it.
            throw JWTSignerError.unreadableKey
        }
        self.keyID = keyID
    }

    /// The signed assertion for Google's OAuth2 JWT-bearer grant: `iss` the service account, `scope`, `aud` the
    /// token URI, `iat` and `exp` (at most one hour later).
    public func assertion(issuer: String, scope: String, audience: String, issuedAt: Date, lifetime: Int = 3600) throws -> String {
        let iat = Int(issuedAt.timeIntervalSince1970)
        var header: [(String, String)] = [("alg", JSONText.string("RS256")), ("typ", JSONText.string("JWT"))]
        if let keyID { header.append(("kid", JSONText.string(keyID))) }
        let claims: [(String, String)] = [
            ("iss", JSONText.string(issuer)),
            ("scope", JSONText.string(scope)),
            ("aud", JSONText.string(audience)),
            ("iat", String(iat)),
            ("exp", String(iat + min(lifetime, 3600))),
        ]
        return try sign(header: JSONText.object(header), claims: JSONText.object(claims))
    }

    /// `BASE64URL(header) . BASE64URL(claims) . BASE64URL(RS256 signature)`.
    public func sign(header: String, claims: String) throws -> String {
        let signingInput = JWTSigner.base64URL(Array(header.utf8)) + "." + JWTSigner.base64URL(Array(claims.utf8))
        let signature = try signature(signingInput: signingInput)
        return signingInput + "." + JWTSigner.base64URL(Array(signature))
    }

    /// The raw RS256 signature of a JWS signing input.
    public func signature(signingInput: String) throws -> Data {
        let digest = SHA256.hash(data: Array(signingInput.utf8))
        return try key.signature(for: digest, padding: .insecurePKCS1v1_5).rawRepresentation
    }

    /// Base64url without padding (RFC 7515 section 2).
    public static func base64URL(_ bytes: some Sequence<UInt8>) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Decodes base64url with or without padding.
    public static func base64URLDecode(_ text: some StringProtocol) -> Data? {
        var s = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while s.count % 4 != 0 { s += "=" }
        return Data(base64Encoded: s)
    }
}

public enum JWTSignerError: Error, Sendable, CustomStringConvertible {
    case unreadableKey
    public var description: String {
        "the service-account private_key is not a readable RSA private key (PEM, 2048 bits or more)"
    }
}
