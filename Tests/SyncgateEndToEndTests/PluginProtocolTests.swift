import Foundation
import SyncgateCore
@testable import SyncgateExec
import SyncgateJSON
import Testing

/// How the host reads a plugin's lines: each error class and scope onto the core's classification (with its
/// Retry-After), and what breaks the protocol.
@Suite("plugin protocol: reading answers")
struct PluginProtocolTests {
    func parse(_ line: String) throws(PluginViolation) -> PluginAnswer { try PluginAnswer.parse(ArraySlice(Array(line.utf8))) }

    @Test func everyClassAndScopeMapsOntoTheCoresClassification() throws {
        let cases: [(String, String, Classification)] = [
            ("retryable", "file", Classification(.retryable(after: .seconds(3)), scope: .file)),
            ("retryable", "destination", Classification(.retryable(after: .seconds(3)), scope: .destination)),
            ("permanent", "file", Classification(.permanent, scope: .file)),
            ("permanent", "destination", Classification(.permanent, scope: .destination)),
            ("deferred", "file", Classification(.deferred(after: .seconds(3)), scope: .file)),
            ("deferred", "destination", Classification(.deferred(after: .seconds(3)), scope: .destination)),
        ]
        for (failureClass, scope, expected) in cases {
            let answer = try parse(#"{"id": 7, "error": {"class": "\#(failureClass)", "scope": "\#(scope)", "code": "c", "message": "m", "retry_after": 3}}"#)
            guard case .error(let id, let body) = answer else {
                Issue.record("\(failureClass)/\(scope): not an error: \(answer)")
                continue
            }
            #expect(id == 7)
            let error = body.destinationError
            #expect(error.classification == expected, "\(failureClass)/\(scope)")
            #expect(Classification.of(error) == expected, "the core's classification agrees")
            #expect(error.code == "c" && error.message == "m")
        }
        // Scope defaults to the file.
        guard case .error(_, let body) = try parse(#"{"id":1,"error":{"class":"permanent","message":"x"}}"#) else { Issue.record("not an error"); return }
        #expect(body.scope == .file)
    }

    @Test func progressEntriesAndResultsAreRead() throws {
        guard case .progress(3, 4096) = try parse(#"{"id":3,"progress":4096}"#) else { Issue.record("progress"); return }
        guard case .want(3, 1) = try parse(#"{"id":3,"want":1}"#) else { Issue.record("want 1"); return }
        guard case .want(3, 16_777_216) = try parse(#"{"id":3,"want":16777216}"#) else { Issue.record("want 16 MiB"); return }
        guard case .entry(4, let entry) = try parse(#"{"id":4,"entry":{"name":"a \"b\".txt","size":12}}"#) else { Issue.record("entry"); return }
        #expect(entry.name == "a \"b\".txt" && entry.size == 12)
        guard case .ok(5, let value) = try parse(#"{"ok":{"detail":"d"},"id":5}"#) else { Issue.record("ok"); return }
        #expect(value["detail"]?.string == "d")
    }

    @Test func linesThatBreakTheProtocolAreNamed() {
        let broken: [(String, String)] = [
            ("not json", "not JSON"),
            ("[1,2]", "must be a JSON object"),
            (#"{"ok":{}}"#, "without a positive whole \"id\""),
            (#"{"id":-1,"ok":{}}"#, "without a positive whole \"id\""),
            (#"{"id":1.5,"ok":{}}"#, "without a positive whole \"id\""),
            (#"{"id":1}"#, "needs one of"),
            (#"{"id":1,"error":{"class":"fatal"}}"#, "retryable, permanent or deferred"),
            (#"{"id":1,"error":{"class":"permanent","scope":"world"}}"#, "file or destination"),
            (#"{"id":1,"error":{"class":"retryable","retry_after":-5}}"#, "retry_after"),
            (#"{"id":1,"progress":-3}"#, "progress"),
            (#"{"id":1,"entry":{"size":3}}"#, "needs a \"name\""),
            (#"{"id":1,"want":0}"#, "\"want\" must be a whole number of bytes, 1 to 16777216"),
            (#"{"id":1,"want":16777217}"#, "\"want\" must be a whole number of bytes, 1 to 16777216"),
            (#"{"id":1,"want":1.5}"#, "\"want\" must be a whole number"),
        ]
        for (line, expected) in broken {
            do {
                let answer = try parse(line)
                Issue.record("\(line): read as \(answer)")
            } catch {
                #expect(error.description.contains(expected), "\(line): \(error)")
            }
        }
    }

    @Test func requestsAreOneLineWhateverTheNameHolds() {
        let name = "new\nline \"quoted\" back\\slash \u{1}\u{7F} \u{2028} caf\u{E9}"
        let text = JSONText.compact(["remote_name": .string(name), "id": 3], sortedKeys: true)
        #expect(!text.contains("\n") && !text.contains("\u{2028}"))
        let back = try? JSONParser.parse(text)
        #expect(back?["remote_name"]?.string == name)
        #expect(back?["id"]?.int64 == 3)
        let theirs = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        #expect(theirs?["remote_name"] as? String == name)
    }

    /// A streamed listing is cut at its bounds: one name over the per-name limit, more names than the limit, more
    /// bytes of names than the limit. The entry past a bound returns the error that stops the listing, and what was
    /// collected is dropped (nothing grows after it).
    @Test func listingsAreBoundedByNamesBytesAndNameLength() {
        let long = ListingCollector(label: "plugin 'x'", limit: 100, byteLimit: 1 << 20, nameLimit: 4096)
        #expect(long.add(RemoteListing.Entry(name: String(repeating: "n", count: 4096))) == nil)
        let refused = long.add(RemoteListing.Entry(name: String(repeating: "n", count: 4097)))
        #expect((refused as? DestinationError)?.code == "listing-name-too-long", "\(String(describing: refused))")
        #expect(long.entries.isEmpty)
        #expect(long.add(RemoteListing.Entry(name: "after")) == nil && long.entries.isEmpty, "nothing is taken in after a refusal")

        let bytes = ListingCollector(label: "plugin 'x'", limit: 1_000_000, byteLimit: 10_000, nameLimit: 4096)
        var stop: (any Error)?
        var added = 0
        while stop == nil && added < 1000 {
            stop = bytes.add(RemoteListing.Entry(name: String(format: "%0999d", added)))
            if stop == nil { added += 1 }
        }
        #expect(added == 10 && (stop as? DestinationError)?.code == "listing-too-long", "\(added) \(String(describing: stop))")

        let count = ListingCollector(label: "plugin 'x'", limit: 3, byteLimit: 1 << 20, nameLimit: 4096)
        let results = (0..<4).map { count.add(RemoteListing.Entry(name: "n\($0)")) }
        #expect(results.prefix(3).allSatisfy { $0 == nil } && (results[3] as? DestinationError)?.code == "listing-too-long")
    }
}
