import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing

/// The status page in a real headless chromium against a real gateway: it shows each destination and the files
/// not synced, changes by itself when a pass delivers a file, and a click on a failed file's Retry button
/// re-attempts it.
@Suite("status page in a browser", .serialized, .enabled(if: BrowserSession.shouldRun, "needs chromium and python3 with websocket-client (scripts/test-deps.d/http.sh)"),
       .timeLimit(.minutes(15)))
struct StatusPageTests {
    /// `archive` takes every file but `report.csv` (a folder stands where it goes); `vault` is blocked (its folder
    /// is a file).
    static func scene() async throws -> TestGateway {
        let gateway = try TestGateway("sg-page", destinations: [
            "{name: archive, type: local, path: archive}", "{name: vault, type: local, path: vault-file}",
        ])
        try gateway.dir.write("vault-file", "a file where the vault's folder should be")
        try gateway.dir.write("outbox/notes/2026-11-24 standup.md", "# standup\n")
        try gateway.dir.write("outbox/photos/cover.png", String(repeating: "p", count: 40_000))
        try gateway.dir.write("outbox/report.csv", "id,name\n1,x\n")
        try FileManager.default.createDirectory(at: gateway.dir.file("archive/report.csv"), withIntermediateDirectories: true)
        try await gateway.runPass()
        return gateway
    }

    /// A JavaScript expression: the text of the count `name` on `destination`'s card.
    static func count(_ destination: String, _ name: String) -> String {
        #"(document.querySelector('.card[data-destination="\#(destination)"] [data-count="\#(name)"] b') || {}).textContent"#
    }

    static func row(_ destination: String, _ path: String) -> String {
        #"li.file[data-destination="\#(destination)"][data-path="\#(path)"]"#
    }

    @Test func showsEachDestinationFollowsDeliveriesAndRetriesAFailedFile() async throws {
        let gateway = try await StatusPageTests.scene()
        defer { gateway.stop() }
        let server = try await RunningServer(gateway: gateway)
        let browser = try await BrowserSession()
        defer { browser.close() }
        try await browser.open(server.base + "/")

        // Each destination, as the ledger has it.
        try await browser.waitFor("document.querySelectorAll('.card').length === 2")
        #expect(try await browser.evaluate("Array.from(document.querySelectorAll('.card h3')).map(e => e.textContent).join(',')") as? String == "archive,vault")
        #expect(try await browser.evaluate("document.querySelector('.card[data-destination=\"archive\"] .state').textContent") as? String == "available")
        #expect(try await browser.evaluate("document.querySelector('.card[data-destination=\"vault\"] .state').textContent") as? String == "blocked")
        let why = try await browser.evaluate("document.querySelector('.card[data-destination=\"vault\"] .why').textContent") as? String
        #expect(why?.contains("3 files wait for it") == true, "\(why ?? "")")
        #expect(try await browser.evaluate(StatusPageTests.count("archive", "synced")) as? String == "2")
        #expect(try await browser.evaluate(StatusPageTests.count("archive", "failed")) as? String == "1")

        // The files not synced: the failed one red with its error and a Retry button, the waiting ones amber.
        let failedRow = StatusPageTests.row("archive", "report.csv")
        #expect(try await browser.evaluate("document.querySelector('\(failedRow) .mark').className") as? String == "mark red")
        let error = try await browser.evaluate("document.querySelector('\(failedRow) .error').textContent") as? String
        #expect(error?.isEmpty == false)
        #expect(try await browser.evaluate("!!document.querySelector('\(failedRow) button.retry')") as? Bool == true)
        #expect(try await browser.evaluate("document.querySelectorAll('li.file[data-destination=\"vault\"] .mark.amber').length") as? Int == 3)
        #expect(try await browser.evaluate("document.querySelectorAll('li.file button.retry').length") as? Int == 1)
        // The filter: failed files only.
        try await browser.click("#status-filter button[data-status=failed]")
        try await browser.waitFor("document.querySelectorAll('li.file').length === 1")
        try await browser.click("#status-filter button[data-status=all]")
        try await browser.waitFor("document.querySelectorAll('li.file').length === 4")

        // A new file is delivered by a pass: the page follows without being reloaded.
        try await browser.waitFor("document.getElementById('live').classList.contains('on')")
        _ = try await browser.evaluate("window.stillTheSamePage = true")
        try gateway.dir.write("outbox/c.txt", "charlie")
        try await gateway.runPass()
        try await browser.waitFor(StatusPageTests.count("archive", "synced") + " === '3'")
        try await browser.waitFor("document.querySelector('.card[data-destination=\"archive\"] .recent-completed')?.textContent.includes('c.txt')")
        #expect(try await browser.evaluate("window.stillTheSamePage === true") as? Bool == true)

        // A change written to the ledger with no delivery event (another process's `forget`, or a batch written
        // after its events): the page reads the report again.
        #expect(try await browser.evaluate(StatusPageTests.count("vault", "synced")) as? String == "0")
        try await gateway.ledger.markSynced(FileKey(source: "outbox", path: "c.txt"), destination: "vault",
                                      receipt: Receipt(remoteName: "c.txt"), size: 7, modificationTime: Date(), sha256: nil, at: Date())
        try await browser.waitFor(StatusPageTests.count("vault", "synced") + " === '1'")

        // The fault is gone; a click on Retry re-attempts the file, which is delivered.
        try FileManager.default.removeItem(at: gateway.dir.file("archive/report.csv"))
        try await browser.click(failedRow + " button.retry")
        try await browser.waitFor("!document.querySelector('\(failedRow)')")
        try await browser.waitFor(StatusPageTests.count("archive", "synced") + " === '4'")
        try await gateway.settle()
        #expect(try gateway.dir.read("archive/report.csv") == Data("id,name\n1,x\n".utf8))
        #expect(try await browser.evaluate(StatusPageTests.count("archive", "failed")) as? String == "0")

        let log = try await browser.log()
        #expect(!log.contains { $0.hasPrefix("exception") || $0.hasPrefix("console.error") }, "\(log)")
        try await server.stop()
    }

    /// An upload in flight shows on its destination's card with its progress, and in the files as uploading
    /// (green); when it ends, the card counts it. The screenshots are taken here: every state is on the page.
    @Test func anUploadInFlightShowsItsProgressUntilItIsDelivered() async throws {
        let car = PacedDestination(holdMarker: "trailer")
        let gateway = try TestGateway("sg-page", destinations: [
            "{name: archive, type: local, path: archive}", "{name: car, type: paced, path: car}",
            "{name: vault, type: local, path: vault-file}",
        ], plugins: [PacedDestination.registration(car)], routes: [
            #"{match: ["**/*"], to: [archive, vault]}"#, #"{match: ["media/**"], to: [car]}"#,
        ])
        defer { gateway.stop() }
        try gateway.dir.write("vault-file", "a file where the vault's folder should be")
        try gateway.dir.write("outbox/notes/2026-11-24 standup.md", "# standup\n")
        try gateway.dir.write("outbox/photos/cover.png", String(repeating: "p", count: 40_000))
        try gateway.dir.write("outbox/report.csv", "id,name\n1,x\n")
        try gateway.dir.write("outbox/media/trailer.mp4", Data(repeating: 7, count: 1_000_000))
        try FileManager.default.createDirectory(at: gateway.dir.file("archive/report.csv"), withIntermediateDirectories: true)
        let server = try await RunningServer(gateway: gateway)
        let browser = try await BrowserSession()
        defer { browser.close() }

        let pass = Task { try await gateway.runPass() }
        #expect(await EventStreamTests.eventually { car.held == ["media/trailer.mp4"] })
        try await browser.open(server.base + "/")
        let inFlight = #"document.querySelector('[data-in-flight="car"]')"#
        try await browser.waitFor("\(inFlight)?.textContent.includes('media/trailer.mp4')")
        // Held at half way: the bar shows it (the last step observers were told of).
        try await browser.waitFor("\(inFlight).querySelector('.pct')?.textContent === '50%'")
        let width = try await browser.evaluate("\(inFlight).querySelector('.bar i').style.width") as? String
        #expect(width == "50%")
        try await browser.waitFor(#"!!document.querySelector('li.file[data-destination="car"][data-path="media/trailer.mp4"] .mark.green')"#)
        try await browser.waitFor("document.getElementById('live').classList.contains('on')")
        #expect(try await browser.evaluate(#"document.querySelector('li.file[data-destination="car"] .row-pct').textContent"#) as? String == "50%")
        #expect(try await browser.evaluate(StatusPageTests.count("car", "uploading")) as? String == "1")

        let shots = try TemporaryDirectory("sg-page-shots")
        defer { shots.remove() }
        try await StatusPageTests.screenshots(browser, server: server, into: shots)

        car.release()
        _ = try await pass.value
        try await browser.waitFor("!\(inFlight).textContent.includes('media/trailer.mp4')")
        try await browser.waitFor(StatusPageTests.count("car", "synced") + " === '1'")
        #expect(try Data(contentsOf: car.folder.appendingPathComponent("media/trailer.mp4")).count == 1_000_000)
        try await browser.waitFor(#"!document.querySelector('li.file[data-destination="car"]')"#)
        try await server.stop()
    }

    /// With a token, the page asks for it once when a change needs it, keeps it in the tab's sessionStorage, and
    /// never shows it.
    @Test func withATokenThePageAsksForItBeforeAChange() async throws {
        let gateway = try await StatusPageTests.scene()
        defer { gateway.stop() }
        let token = "page-token-\(UUID().uuidString)"
        let server = try await RunningServer(gateway: gateway, token: token)
        let browser = try await BrowserSession()
        defer { browser.close() }
        try await browser.open(server.base + "/")
        let failedRow = StatusPageTests.row("archive", "report.csv")
        try await browser.waitFor("!!document.querySelector('\(failedRow) button.retry')")
        #expect(try await browser.evaluate("document.getElementById('token-form').hidden") as? Bool == true)

        try FileManager.default.removeItem(at: gateway.dir.file("archive/report.csv"))
        try await browser.click(failedRow + " button.retry")
        try await browser.waitFor("!document.getElementById('token-form').hidden")
        // A wrong token first: refused, asked again.
        _ = try await browser.evaluate("document.getElementById('token-input').value = 'wrong-token-0123456789'")
        try await browser.click("#token-form button[type=submit]")
        try await browser.waitFor("!document.getElementById('token-form').hidden && document.querySelector('#token-form label').textContent.includes('refused')")
        await #expect(try gateway.ledger.entries().first { $0.file.path == "report.csv" }?.status == .failed)

        try await browser.click(failedRow + " button.retry")
        _ = try await browser.evaluate("document.getElementById('token-input').value = '\(token)'")
        try await browser.click("#token-form button[type=submit]")
        try await browser.waitFor("!document.querySelector('\(failedRow)')")
        try await gateway.settle()
        #expect(try gateway.dir.read("archive/report.csv") == Data("id,name\n1,x\n".utf8))
        #expect(try await browser.evaluate("sessionStorage.getItem('syncgate-token')") as? String == token)
        #expect(try await browser.evaluate("document.documentElement.outerHTML.includes('\(token)')") as? Bool == false)
        try await server.stop()
    }

    /// Listening beyond loopback (0.0.0.0, reached here through 127.0.0.1 only), even reading needs the token: the
    /// page asks for it first, then shows everything and follows the events with it (a header `EventSource`
    /// could not send).
    @Test func awayFromLoopbackThePageAsksForTheTokenToReadAndFollowsEventsWithIt() async throws {
        let gateway = try await StatusPageTests.scene()
        defer { gateway.stop() }
        let token = "page-token-\(UUID().uuidString)"
        let server = try await RunningServer(gateway: gateway, host: "0.0.0.0", token: token)
        let browser = try await BrowserSession()
        defer { browser.close() }
        try await browser.open(server.base + "/")
        try await browser.waitFor("!document.getElementById('token-form').hidden")
        #expect(try await browser.evaluate("document.querySelectorAll('.card').length") as? Int == 0, "nothing is shown before the token")
        _ = try await browser.evaluate("document.getElementById('token-input').value = '\(token)'")
        try await browser.click("#token-form button[type=submit]")
        try await browser.waitFor("document.querySelectorAll('.card').length === 2")
        try await browser.waitFor("document.getElementById('live').classList.contains('on')")
        try gateway.dir.write("outbox/d.txt", "delta")
        try await gateway.runPass()
        try await browser.waitFor(StatusPageTests.count("archive", "synced") + " === '3'")
        #expect(try await browser.evaluate("document.documentElement.outerHTML.includes('\(token)')") as? Bool == false)
        let log = try await browser.log()
        #expect(!log.contains { $0.hasPrefix("exception") }, "\(log)")
        try await server.stop()
    }

    /// A secret that reaches an error text (here the test folder's name, registered as a secret, which every
    /// error of the local destination names) is shown redacted, on a card and in the files.
    @Test func secretsInErrorsAreShownRedacted() async throws {
        let gateway = try await StatusPageTests.scene()
        defer { gateway.stop() }
        let secret = gateway.dir.url.lastPathComponent
        _ = Secret(secret)
        let server = try await RunningServer(gateway: gateway)
        let browser = try await BrowserSession()
        defer { browser.close() }
        try await browser.open(server.base + "/")
        try await browser.waitFor("document.querySelectorAll('li.file').length === 4")
        let text = try #require(try await browser.evaluate("document.body.innerText") as? String)
        #expect(!text.contains(secret))
        #expect(text.contains("not-a-file: /tmp/<redacted>/archive/report.csv"), "\(text)")
        #expect(text.contains("vault-file"))
        try await server.stop()
    }

    /// The page as a person sees it, on a desktop, in dark colours and on a phone; checked to be real PNGs. With
    /// `SYNCGATE_SCREENSHOT_DIR` set they are kept there (docs/status-page.png is the desktop one).
    static func screenshots(_ browser: BrowserSession, server: RunningServer, into dir: TemporaryDirectory) async throws {
        let keep = ProcessInfo.processInfo.environment["SYNCGATE_SCREENSHOT_DIR"].map { URL(fileURLWithPath: $0) }
        let desktop = dir.file("status-page.png"), dark = dir.file("status-page-dark.png"), phone = dir.file("status-page-phone.png")
        try await browser.screenshot(to: desktop)
        try await browser.colorScheme("dark")
        #expect(try await browser.evaluate("getComputedStyle(document.body).backgroundColor") as? String == "rgb(15, 20, 27)")
        try await browser.screenshot(to: dark)
        try await browser.colorScheme(nil)
        try await browser.open(server.base + "/", width: 390, height: 844, mobile: true)
        try await browser.waitFor("document.querySelectorAll('.card').length === 3 && document.getElementById('live').classList.contains('on')")
        // Nothing wider than the phone's screen.
        #expect(try await browser.evaluate("document.documentElement.scrollWidth <= window.innerWidth") as? Bool == true)
        try await browser.screenshot(to: phone)
        for file in [desktop, dark, phone] {
            let data = try Data(contentsOf: file)
            #expect(data.prefix(8) == Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]), "\(file.lastPathComponent) is a PNG")
            #expect(data.count > 10_000, "\(file.lastPathComponent) shows something")
            if let keep {
                try? FileManager.default.createDirectory(at: keep, withIntermediateDirectories: true)
                try? FileManager.default.removeItem(at: keep.appendingPathComponent(file.lastPathComponent))
                try FileManager.default.copyItem(at: file, to: keep.appendingPathComponent(file.lastPathComponent))
            }
        }
    }
}
