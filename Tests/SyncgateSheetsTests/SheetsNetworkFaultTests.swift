import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing

@testable import SyncgateSheets

/// Network faults between the destination and the Sheets API, through the core's fault-injecting TCP proxy
/// (the token endpoint is reached directly).
@Suite(
    "Sheets destination through the fault proxy", .serialized,
    .enabled(if: SheetsTestServer.shouldRun, "needs python3 with cryptography (scripts/test-deps.d/sheets.sh)"))
struct SheetsNetworkFaultTests {
    func destination(_ server: SheetsTestServer, proxy: FaultProxy, dir: TemporaryDirectory) throws -> SheetsDestination {
        try SheetsFixtures.destination(
            """
            spreadsheet_id: test-spreadsheet
            credentials_file: \(server.keyFile.path)
            api_base: http://127.0.0.1:\(proxy.port)
            request_timeout: 700ms
            """, base: dir.url)
    }

    @Test func connectionFaultsAreRetryableAndNothingIsDuplicated() async throws {
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let proxy = try await FaultProxy.start(targetPort: server.port)
        defer { proxy.stop() }
        let dir = try TemporaryDirectory("sheets-proxy")
        defer { dir.remove() }
        try dir.write("a.csv", "n\n1\n2\n")
        let item = try SheetsFixtures.item(dir, "a.csv")

        let faults: [([String: Any], (DestinationError) -> Bool)] = [
            // Lost or silent connections: the file's retryable failure (the request may have gone out).
            (["mode": "reset", "after": 40], { $0.classification == Classification(.retryable(), scope: .file) && $0.code == "connection" }),
            (["mode": "stall"], { $0.classification == Classification(.retryable(), scope: .file) }),
            (["mode": "cut", "after": 10], { $0.classification == Classification(.retryable(), scope: .file) }),
            // A 503 with Retry-After throttles the destination (no retry spent); its page is quoted.
            (["mode": "http_error", "status": 503, "retry_after": 2, "body": "<html>busy</html>", "content_type": "text/html"],
             { $0.classification == Classification(.deferred(after: .seconds(2)), scope: .destination) && $0.code == "http-503" && $0.message.contains("busy") }),
            (["mode": "http_error", "status": 502, "body": "<html>bad gateway</html>", "content_type": "text/html"],
             { $0.classification == Classification(.retryable(), scope: .file) && $0.code == "http-502" }),
        ]
        for (fault, check) in faults {
            try proxy.set(fault.merging(["count": 1]) { a, _ in a })
            let destination = try destination(server, proxy: proxy, dir: dir)  // a new connection meets the fault
            let error = await SheetsFixtures.uploadError(destination, item)
            #expect(error.map(check) == true, "\(fault): \(String(describing: error))")
            await destination.finish()
            try proxy.pass()
        }
        let destination = try destination(server, proxy: proxy, dir: dir)
        _ = try await destination.upload(item) { _ in }
        #expect(try server.textRows().dropFirst().map { $0[1] } == ["1", "2"])
        await destination.finish()
        // Sent again by a fresh destination (a new run): the key column says the rows are there.
        let rerun = try self.destination(server, proxy: proxy, dir: dir)
        #expect(try await rerun.upload(item) { _ in }.detail == "no new rows (2 already present)")
        await rerun.finish()
    }
}
