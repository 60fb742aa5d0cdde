import Foundation
import SyncgateTestSupport
import Testing

@testable import SyncgateCore

/// The Redactor scrubs a secret in every form an answer can echo it in, and before text is cut.
@Suite("Redactor")
struct RedactorTests {
    /// Quotes, a backslash, `/`, `+`, a space, non-ASCII of two, three and four UTF-8 bytes: every encoding differs
    /// from the raw form.
    static let hostile = "Zq9Kw7\"hostile\\pa ss/wo+rd-ünï-€-😀-Vb3Np"

    func make(_ secrets: String...) -> Redactor {
        let redactor = Redactor()
        for secret in secrets { redactor.register(secret) }
        return redactor
    }

    /// Forms computed by other encoders than the Redactor's own (Foundation's, and Python's when it is there).
    func foreignEncodings(_ secret: String) throws -> [String: String] {
        var forms: [String: String] = ["raw": secret]
        func inner(_ data: Data) -> String { String(String(decoding: data, as: UTF8.self).dropFirst().dropLast()) }
        forms["JSONSerialization"] = inner(try JSONSerialization.data(withJSONObject: secret, options: .fragmentsAllowed))
        let encoder = JSONEncoder()
        forms["JSONEncoder"] = inner(try encoder.encode(secret))
        encoder.outputFormatting = .withoutEscapingSlashes
        forms["JSONEncoder without \\/"] = inner(try encoder.encode(secret))
        let twice = try JSONSerialization.data(withJSONObject: ["message": "body: {\"secret\":\"\(forms["JSONSerialization"]!)\"}"])
        forms["JSON in JSON"] = String(decoding: twice, as: UTF8.self)
        forms["percent (alphanumerics)"] = secret.addingPercentEncoding(withAllowedCharacters: .alphanumerics)
        forms["percent (query)"] = secret.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed)
        forms["base64"] = Data(secret.utf8).base64EncodedString()
        forms["base64url"] = Data(secret.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        if let python = ProcessRunner.which("python3") {
            let script = """
                import base64, html, json, sys, urllib.parse
                s = sys.argv[1]
                print(json.dumps({
                    "python json": json.dumps(s)[1:-1],
                    "python json, utf-8": json.dumps(s, ensure_ascii=False)[1:-1],
                    "python json twice": json.dumps(json.dumps({"secret": s}))[1:-1],
                    "python quote": urllib.parse.quote(s),
                    "python quote_plus": urllib.parse.quote_plus(s),
                    "python html": html.escape(s),
                    "python html of json": html.escape(json.dumps(s)[1:-1]),
                    "python base64 of a JSON body": base64.b64encode(json.dumps({"secret": s}, ensure_ascii=False).encode()).decode(),
                    "python base64url of a body": base64.urlsafe_b64encode(("x=1&secret=" + s).encode()).decode(),
                }))
                """
            let result = try ProcessRunner.runBlocking(python, ["-c", script, secret])
            let extra = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: String])
            forms.merge(extra) { a, _ in a }
        }
        return forms
    }

    @Test func everyEncodingOfASecretIsScrubbed() throws {
        let secret = Self.hostile
        let redactor = make(secret)
        let forms = try foreignEncodings(secret)
        #expect(forms.count >= 11)
        for (name, form) in forms {
            let text = "HTTP 400: echo [" + form + "] end"
            let scrubbed = redactor.redact(text)
            #expect(scrubbed != text, "\(name) was not scrubbed: \(form)")
            #expect(scrubbed.contains("<redacted>"), "\(name)")
            #expect(!scrubbed.contains("Zq9Kw7") && !scrubbed.contains("Vb3Np"), "\(name): \(scrubbed)")
            // Of the base64 forms nothing decodes to the secret any more.
            for run in scrubbed.split(whereSeparator: { !($0.isLetter || $0.isNumber || "+/=_-".contains($0)) }) {
                for start in 0..<4 {
                    let piece = String(run.dropFirst(start)).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
                    let padded = piece.padding(toLength: ((piece.count + 3) / 4) * 4, withPad: "=", startingAt: 0)
                    if let data = Data(base64Encoded: padded) {
                        #expect(!String(decoding: data, as: UTF8.self).contains("hostile"), "\(name): \(run)")
                    }
                }
            }
        }
    }

    @Test func plainTextAndOtherSecretsStayAsTheyWere() {
        let redactor = make("s3cr3t-value-123!", "abc", Self.hostile)
        let text = "synced 12 files... (3 already present) ünï € 😀 \"quoted\" \\ / +"
        #expect(redactor.redact(text) == text)
        #expect(redactor.redact("auth failed for s3cr3t-value-123!") == "auth failed for <redacted>")
        #expect(redactor.redact("abc is too short to be a secret") == "abc is too short to be a secret")
        #expect(Redactor().redact("nothing registered") == "nothing registered")
    }

    @Test func aSecretsStartBeforeACutMarkIsScrubbed() {
        let secret = "tracker-secret-0123456789"
        let redactor = make(secret)
        for length in [4, 9, 24] {
            let cut = String(secret.prefix(length))
            #expect(redactor.redact("body: {\"secret\":\"\(cut)...") == "body: {\"secret\":\"<redacted>...")
            #expect(redactor.redact("x \(cut)… (more)") == "x <redacted>… (more)")
        }
        // Its JSON-escaped form cut the same way.
        let quoted = make(Self.hostile)
        let escaped = "Zq9Kw7\\\"hostile\\\\pa"
        #expect(quoted.redact("{\"secret\":\"\(escaped)...") == "{\"secret\":\"<redacted>...")
        // Three characters are too few to tell from ordinary text.
        #expect(redactor.redact("tra...") == "tra...")
    }

    @Test func snippetRedactsBeforeItCuts() {
        let redactor = make(Self.hostile)
        let json = "Zq9Kw7\\\"hostile\\\\pa ss/wo+rd-ünï-€-😀-Vb3Np"
        for before in [280, 289, 295, 299] {
            let text = String(repeating: "x", count: before) + json + " tail"
            let snippet = redactor.snippet(text, limit: 300)
            #expect(!snippet.contains("Zq9K"), "\(before): \(snippet.suffix(30))")
            #expect(snippet.contains("<redacted>"), "\(before): \(snippet.suffix(30))")
            #expect(!snippet.contains("<reda...") && snippet.count <= 300 + "<redacted>...".count, "\(before): \(snippet.suffix(30))")
        }
        #expect(redactor.snippet("short") == "short")
        #expect(redactor.snippet(String(repeating: "y", count: 301), limit: 300) == String(repeating: "y", count: 300) + "...")
    }

    @Test func redactionStaysCheapForEveryLine() {
        let redactor = make(Self.hostile, "AKIAIOSFODNN7EXAMPLE/wJalrXUtnFEMI/K7MDENG", "tracker-secret-0123456789")
        let line = "syncgate: info: builds-sheet: synced outbox/2026/builds-0042.csv (1.2 KiB, 3 rows, Builds!A12:E14) in 0.21 s ... ok"
        let clock = ContinuousClock()
        let started = clock.now
        var total = 0
        for _ in 0..<100_000 { total &+= redactor.redact(line).utf8.count }
        let elapsed = clock.now - started
        #expect(total == line.utf8.count * 100_000)
        // 100,000 lines (a large sync's events): 0.1 s optimised (11 times faster than the Redactor that matched
        // only the raw forms), 3.4 s in a debug build; the bound catches a pathological scan (27 s, a first
        // version's) on a loaded machine.
        #expect(elapsed < .seconds(15), "\(elapsed)")
        print("redact: 100,000 lines of \(line.utf8.count) bytes with 3 secrets in \(elapsed)")
    }

    /// An error code is redacted like a message, then cut: a code that echoes a registered secret keeps its own words.
    @Test func errorCodesAreRedactedAndCut() {
        let redactor = Redactor()
        let secret = "code-secret-\(UUID().uuidString)"
        redactor.register(secret)
        #expect(redactor.redactCode("denied-" + secret) == "denied-<redacted>")
        #expect(redactor.redactCode("AccessDenied") == "AccessDenied")
        let long = redactor.redactCode(String(repeating: "C", count: 10_000))
        #expect(long.count <= Redactor.codeLimit + 3 && long.hasSuffix("..."))
    }

    /// Control characters in names are shown as visible escapes; printable text, non-ASCII included, is left alone.
    @Test func terminalTextEscapesControlCharacters() {
        #expect(TerminalText.escape("\rFAKE: all synced") == "\\rFAKE: all synced")
        #expect(TerminalText.escape("a\u{07}b\u{1B}[2Jc\u{7F}d\u{0}e\tf\ng") == "a\\ab\\e[2Jc\\x7fd\\x00e\\tf\\ng")
        #expect(TerminalText.escape("c1\u{9B}x bidi\u{202E}y") == "c1\\u{009b}x bidi\\u{202e}y")
        #expect(TerminalText.escape("café ünï 😀 back\\slash") == "café ünï 😀 back\\slash")
        #expect(TerminalText.escapeKeepingLines("one\ntwo\r") == "one\ntwo\\r")
    }

    /// A name that is not valid UTF-8 keeps what decodes and shows each stray byte as \xNN, so two such names
    /// differ when shown (a replacement character would make them alike).
    @Test func anUndecodableNameShowsItsStrayBytes() {
        #expect(TerminalText.undecodable(Array("bad-".utf8) + [0xFF, 0xFE] + Array(".txt".utf8)) == "bad-\\xff\\xfe.txt")
        #expect(TerminalText.undecodable(Array("bad-".utf8) + [0xFE, 0xFF] + Array(".txt".utf8)) == "bad-\\xfe\\xff.txt")
        // Latin-1 "café", then a UTF-8 "é" and an emoji kept whole, a truncated sequence, an overlong "/" (C0 AF).
        #expect(TerminalText.undecodable([0x63, 0x61, 0x66, 0xE9] + Array("-é😀".utf8) + [0xE2, 0x82, 0x2E, 0xC0, 0xAF]) == "caf\\xe9-é😀\\xe2\\x82.\\xc0\\xaf")
        #expect(TerminalText.undecodable([UInt8]()) == "")
    }
}

