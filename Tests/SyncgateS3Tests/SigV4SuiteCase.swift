import Foundation
@testable import SyncgateS3

/// One request of the AWS SigV4 test suite, parsed from its `.req` / `request.txt` text.
struct SigV4SuiteCase {
    var name: String
    var method: String
    var rawPath: String
    var query: [(name: String, value: String)]
    var headers: [(name: String, value: String)]
    var body: Data

    init(name: String, requestText: String) {
        self.name = name
        let (head, body) = SigV4SuiteCase.split(requestText)
        self.body = Data(body.utf8)
        var lines = head.components(separatedBy: "\n")
        let requestLine = lines.removeFirst()
        let parts = requestLine.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        method = parts[0]
        // The target may hold spaces ("/example space/"): everything between the method and " HTTP/1.1".
        let target = parts.dropFirst().dropLast().joined(separator: " ")
        if let mark = target.firstIndex(of: "?") {
            rawPath = String(target[..<mark])
            query = target[target.index(after: mark)...].split(separator: "&").map { pair in
                let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                return (S3URIEncoding.decode(String(kv[0])), kv.count > 1 ? S3URIEncoding.decode(String(kv[1])) : "")
            }
        } else {
            rawPath = target
            query = []
        }
        var headers: [(name: String, value: String)] = []
        for line in lines where !line.isEmpty {
            if line.first == " " || line.first == "\t", !headers.isEmpty {
                headers[headers.count - 1].value += "\n" + line
            } else if let colon = line.firstIndex(of: ":") {
                headers.append((String(line[..<colon]), String(line[line.index(after: colon)...])))
            }
        }
        self.headers = headers
    }

    /// Splits at the first empty line (head, body).
    static func split(_ text: String) -> (String, String) {
        let normalized = text.replacingOccurrences(of: "\r\n", with: "\n")
        if let range = normalized.range(of: "\n\n") {
            return (String(normalized[..<range.lowerBound]), String(normalized[range.upperBound...]))
        }
        return (normalized.hasSuffix("\n") ? String(normalized.dropLast()) : normalized, "")
    }

    /// The path as S3 rules encode it: once, never normalised.
    var canonicalPath: String { S3URIEncoding.encode(rawPath, keepSlash: true) }

    var payloadHash: String { SigV4Signer.hexSHA256(body) }

    /// Whether a normalising signer would change the path ("//", "." or ".." segments): such cases assume
    /// normalisation, which S3 never does.
    var pathNeedsNormalizing: Bool {
        let segments = rawPath.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        for (index, segment) in segments.enumerated() {
            if segment == "." || segment == ".." { return true }
            if segment.isEmpty && index != segments.count - 1 { return true }
        }
        return false
    }

    func request(extraHeaders: [(name: String, value: String)] = [], dropping: Set<String> = []) -> SigV4Signer.Request {
        SigV4Signer.Request(
            method: method, path: canonicalPath, query: query,
            headers: headers.filter { !dropping.contains($0.name.lowercased()) } + extraHeaders, payloadHash: payloadHash)
    }

    static func read(_ url: URL) -> String? {
        guard let text = try? String(contentsOf: url, encoding: .utf8) else { return nil }
        return text
    }

    /// Expected texts are compared without trailing line breaks.
    static func trimmed(_ text: String) -> String {
        var text = text.replacingOccurrences(of: "\r\n", with: "\n")
        while text.hasSuffix("\n") { text.removeLast() }
        return text
    }
}
