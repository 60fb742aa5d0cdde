import SyncgateNetwork
import Testing

/// `NO_PROXY` read as curl reads it (docs/network.md).
@Suite("NO_PROXY rules")
struct NoProxyRulesTests {
    @Test(arguments: [
        // entries, host, port, matches
        ("example.com", "example.com", 443, true),
        ("example.com", "s3.example.com", 443, true),
        ("example.com", "a.b.example.com", 80, true),
        ("example.com", "myexample.com", 443, false),
        ("example.com", "example.com.evil.net", 443, false),
        (".example.com", "example.com", 443, true),
        (".example.com", "s3.example.com", 443, true),
        ("*.example.com", "s3.example.com", 443, true),
        ("EXAMPLE.com", "s3.Example.COM", 443, true),
        ("example.com.", "s3.example.com", 443, true),
        ("example.com", "s3.example.com.", 443, true),
        ("*", "anything.at.all", 443, true),
        ("*", "10.1.2.3", 80, true),
        ("internal, .corp.test ,localhost", "files.corp.test", 443, true),
        ("internal,.corp.test", "internal", 443, true),
        ("internal .corp.test", "x.corp.test", 443, true),
        ("10.0.0.0/8", "10.200.3.4", 443, true),
        ("10.0.0.0/8", "11.0.0.1", 443, false),
        ("10.0.0.0/8", "ten.example", 443, false),
        ("192.168.1.0/24", "192.168.1.77", 9000, true),
        ("192.168.1.0/24", "192.168.2.1", 9000, false),
        ("172.16.0.0/12", "172.31.255.255", 443, true),
        ("172.16.0.0/12", "172.32.0.1", 443, false),
        ("0.0.0.0/0", "8.8.8.8", 443, true),
        ("169.254.169.254", "169.254.169.254", 80, true),
        ("169.254.169.254", "169.254.169.253", 80, false),
        ("fd00::/8", "[fd12::1]", 443, true),
        ("fd00::/8", "fe80::1", 443, false),
        ("::1", "[::1]", 443, true),
        ("[::1]:8443", "::1", 8443, true),
        ("[::1]:8443", "::1", 443, false),
        ("example.com:8443", "s3.example.com", 8443, true),
        ("example.com:8443", "s3.example.com", 443, false),
        ("10.0.0.1:9000", "10.0.0.1", 9000, true),
        ("10.0.0.1:9000", "10.0.0.1", 9001, false),
        ("", "example.com", 443, false),
        (" , ,", "example.com", 443, false),
    ] as [(String, String, Int, Bool)])
    func matching(entries: String, host: String, port: Int, expected: Bool) {
        #expect(NoProxyRules(entries).matches(host: host, port: port) == expected, "NO_PROXY=\(entries) host \(host):\(port)")
    }

    @Test func malformedEntriesAreIgnoredAndTheRestStillApply() {
        let rules = NoProxyRules("10.0.0.0/33, a b, [::1, host:99999, good.test")
        #expect(rules.matches(host: "x.good.test", port: 443))
        #expect(!rules.matches(host: "10.0.0.1", port: 443), "the /33 range is not read as anything")
        #expect(rules.entries.count == 3, "\(rules.entries)")  // a, b (split on the blank) and good.test
    }
}
