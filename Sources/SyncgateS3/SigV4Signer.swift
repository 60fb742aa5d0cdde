import Crypto
import Foundation
import SyncgateCore

/// AWS Signature Version 4, as the spec and its official test suite define it. Pure: credentials and the parts
/// of a request in, headers (or presigned query items) out; no clock, no HTTP client.
///
/// S3 rules: the caller passes the path already encoded once (``S3URIEncoding/objectPath(bucket:key:)``); it
/// is never normalised. The payload hash is the caller's (`x-amz-content-sha256`).
public struct SigV4Signer: Sendable {
    public static let algorithm = "AWS4-HMAC-SHA256"
    /// SHA-256 of the empty payload.
    public static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    public static let unsignedPayload = "UNSIGNED-PAYLOAD"

    public var credentials: SigV4Credentials
    public var region: String
    public var service: String

    public init(credentials: SigV4Credentials, region: String, service: String = "s3") {
        self.credentials = credentials
        self.region = region
        self.service = service
    }

    /// One request to sign. `path` is the canonical URI (already encoded once); `query` holds decoded names and
    /// values (they are encoded here); `headers` are every header to sign, in the order they appear (duplicate
    /// names are joined with `,` in that order).
    public struct Request: Sendable {
        public var method: String
        public var path: String
        public var query: [(name: String, value: String)]
        public var headers: [(name: String, value: String)]
        public var payloadHash: String

        public init(
            method: String, path: String, query: [(name: String, value: String)] = [],
            headers: [(name: String, value: String)], payloadHash: String
        ) {
            self.method = method
            self.path = path
            self.query = query
            self.headers = headers
            self.payloadHash = payloadHash
        }
    }

    /// What signing produced: the headers to add to the request, plus the intermediate texts (for tests).
    public struct Signature: Sendable {
        /// Headers to add: `X-Amz-Date`, `X-Amz-Security-Token` (when there is a session token) and
        /// `Authorization`. (`x-amz-content-sha256`, when wanted, is the caller's: sign it by passing it in.)
        public var headers: [(name: String, value: String)]
        public var canonicalRequest: String
        public var stringToSign: String
        public var signature: String
        public var signedHeaders: String
        public var authorization: String
    }

    /// Signs with an `Authorization` header. `signSessionToken: false` adds the token after signing (the
    /// suite's `post-sts-header-after` case; S3 itself wants it signed).
    public func sign(_ request: Request, date: Date, signSessionToken: Bool = true) -> Signature {
        let amzDate = SigV4Signer.amzDate(date)
        var headers = request.headers
        headers.append((name: "X-Amz-Date", value: amzDate))
        var added: [(name: String, value: String)] = [("X-Amz-Date", amzDate)]
        if let token = credentials.sessionToken {
            if signSessionToken { headers.append((name: "X-Amz-Security-Token", value: token.reveal())) }
            added.append(("X-Amz-Security-Token", token.reveal()))
        }
        let (canonicalHeaders, signedHeaders) = SigV4Signer.canonicalHeaders(headers)
        let canonicalRequest = [
            request.method, request.path, S3URIEncoding.canonicalQuery(request.query), canonicalHeaders,
            signedHeaders, request.payloadHash,
        ].joined(separator: "\n")
        let scope = credentialScope(amzDate)
        let stringToSign = SigV4Signer.stringToSign(amzDate: amzDate, scope: scope, canonicalRequest: canonicalRequest)
        let signature = sign(stringToSign: stringToSign, day: String(amzDate.prefix(8)))
        let authorization =
            "\(SigV4Signer.algorithm) Credential=\(credentials.accessKeyID.reveal())/\(scope), SignedHeaders=\(signedHeaders), Signature=\(signature)"
        added.append(("Authorization", authorization))
        return Signature(
            headers: added, canonicalRequest: canonicalRequest, stringToSign: stringToSign, signature: signature,
            signedHeaders: signedHeaders, authorization: authorization)
    }

    /// A presigned request: the query items to append (`X-Amz-Algorithm` ... `X-Amz-Signature`), valid for
    /// `expires` seconds. `request.headers` are the headers to sign (at least `host`).
    public func presign(_ request: Request, date: Date, expires: Int, signSessionToken: Bool = true) -> (
        query: [(name: String, value: String)], canonicalRequest: String, stringToSign: String, signature: String
    ) {
        let amzDate = SigV4Signer.amzDate(date)
        let scope = credentialScope(amzDate)
        let (canonicalHeaders, signedHeaders) = SigV4Signer.canonicalHeaders(request.headers)
        var auth: [(name: String, value: String)] = [
            ("X-Amz-Algorithm", SigV4Signer.algorithm),
            ("X-Amz-Credential", "\(credentials.accessKeyID.reveal())/\(scope)"),
            ("X-Amz-Date", amzDate),
            ("X-Amz-Expires", String(expires)),
            ("X-Amz-SignedHeaders", signedHeaders),
        ]
        if let token = credentials.sessionToken, signSessionToken {
            auth.append(("X-Amz-Security-Token", token.reveal()))
        }
        let canonicalRequest = [
            request.method, request.path, S3URIEncoding.canonicalQuery(request.query + auth), canonicalHeaders,
            signedHeaders, request.payloadHash,
        ].joined(separator: "\n")
        let stringToSign = SigV4Signer.stringToSign(amzDate: amzDate, scope: scope, canonicalRequest: canonicalRequest)
        let signature = sign(stringToSign: stringToSign, day: String(amzDate.prefix(8)))
        if let token = credentials.sessionToken, !signSessionToken {
            auth.append(("X-Amz-Security-Token", token.reveal()))
        }
        auth.append(("X-Amz-Signature", signature))
        return (auth, canonicalRequest, stringToSign, signature)
    }

    // MARK: The parts

    func credentialScope(_ amzDate: String) -> String {
        "\(amzDate.prefix(8))/\(region)/\(service)/aws4_request"
    }

    static func stringToSign(amzDate: String, scope: String, canonicalRequest: String) -> String {
        [algorithm, amzDate, scope, hexSHA256(Data(canonicalRequest.utf8))].joined(separator: "\n")
    }

    func sign(stringToSign: String, day: String) -> String {
        let secret = SymmetricKey(data: Data(("AWS4" + credentials.secretAccessKey.reveal()).utf8))
        let kDate = SigV4Signer.hmac(secret, day)
        let kRegion = SigV4Signer.hmac(SymmetricKey(data: kDate), region)
        let kService = SigV4Signer.hmac(SymmetricKey(data: kRegion), service)
        let kSigning = SigV4Signer.hmac(SymmetricKey(data: kService), "aws4_request")
        return SigV4Signer.hex(SigV4Signer.hmac(SymmetricKey(data: kSigning), stringToSign))
    }

    /// Canonical headers (lower-case names, sorted; values trimmed with inner runs of white space collapsed to
    /// one space; duplicates joined with `,`) and the signed-headers list.
    static func canonicalHeaders(_ headers: [(name: String, value: String)]) -> (String, String) {
        var merged: [String: [String]] = [:]
        for header in headers {
            merged[header.name.lowercased(), default: []].append(collapse(header.value))
        }
        let names = merged.keys.sorted()
        let text = names.map { "\($0):\(merged[$0]!.joined(separator: ","))\n" }.joined()
        return (text, names.joined(separator: ";"))
    }

    /// Trims a header value and collapses each run of spaces, tabs and line breaks into one space.
    static func collapse(_ value: String) -> String {
        var out = ""
        var pendingSpace = false
        for scalar in value.unicodeScalars {
            if scalar == " " || scalar == "\t" || scalar == "\n" || scalar == "\r" {
                pendingSpace = !out.isEmpty
            } else {
                if pendingSpace { out.append(" ") }
                pendingSpace = false
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    static func amzDate(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return String(
            format: "%04d%02d%02dT%02d%02d%02dZ", c.year!, c.month!, c.day!, c.hour!, c.minute!, c.second!)
    }

    static func hmac(_ key: SymmetricKey, _ text: String) -> Data {
        Data(HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: key))
    }

    public static func hexSHA256(_ data: Data) -> String { hex(Data(SHA256.hash(data: data))) }

    static func hex<D: Sequence>(_ bytes: D) -> String where D.Element == UInt8 {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
