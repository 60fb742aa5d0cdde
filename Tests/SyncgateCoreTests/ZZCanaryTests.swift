import Foundation
import Testing

@Suite struct ZZCanaryTests {
    @Test func canary() async throws {
        let end = Date().addingTimeInterval(170)
        while Date() < end {
            let start = Date()
            try await Task.sleep(for: .milliseconds(50))
            let late = Date().timeIntervalSince(start) - 0.05
            if late > 1.0 { print(String(format: "CANARY stalled %.1f s ending at %.1f", late, Date().timeIntervalSince1970)) }
        }
    }
}
