import Foundation
import SyncgateCore
import SyncgateNetwork
import Testing

/// Which proxy a request takes: the `proxy` key, then the environment by scheme (lower case first), `NO_PROXY`,
/// loopback hosts direct.
@Suite("Proxy settings")
struct ProxySettingsTests {
    func decide(_ environment: [String: String], _ url: String, override: ProxySettings.Override? = nil) throws -> ProxySettings.Decision {
        try ProxySettings(override: override, environment: environment).decision(for: URL(string: url)!)
    }

    @Test func schemePicksTheVariable() throws {
        let env = ["HTTPS_PROXY": "http://secure-proxy:3128", "HTTP_PROXY": "http://plain-proxy:8080"]
        #expect(try decide(env, "https://s3.example.com").proxy == HTTPProxy(host: "secure-proxy", port: 3128))
        #expect(try decide(env, "http://s3.example.com:9000").proxy == HTTPProxy(host: "plain-proxy", port: 8080))
        #expect(try decide(["HTTP_PROXY": "http://plain-proxy:8080"], "https://s3.example.com").proxy == nil, "no HTTPS_PROXY: direct")
    }

    @Test func lowerCaseWinsOverUpperCaseAndEmptyIsUnset() throws {
        let both = ["https_proxy": "http://lower:1", "HTTPS_PROXY": "http://upper:2"]
        #expect(try decide(both, "https://h.example").proxy?.host == "lower")
        let emptyLower = ["https_proxy": "", "HTTPS_PROXY": "http://upper:2"]
        #expect(try decide(emptyLower, "https://h.example").proxy?.host == "upper", "an empty variable counts as unset")
        let noProxy = ["HTTPS_PROXY": "http://upper:2", "no_proxy": "h.example", "NO_PROXY": "other.example"]
        #expect(try decide(noProxy, "https://h.example").proxy == nil)
        #expect(try decide(noProxy, "https://other.example").proxy != nil, "NO_PROXY is shadowed by no_proxy")
    }

    @Test func noProxyAndLoopbackGoDirect() throws {
        let env = ["HTTPS_PROXY": "http://proxy:3128", "HTTP_PROXY": "http://proxy:3128", "NO_PROXY": ".internal.test,10.0.0.0/8"]
        #expect(try decide(env, "https://files.internal.test") == .direct(reason: "NO_PROXY matches files.internal.test"))
        #expect(try decide(env, "http://10.1.2.3:9000").proxy == nil)
        for host in ["localhost", "api.localhost", "127.0.0.1", "127.5.6.7", "[::1]"] {
            #expect(try decide(env, "http://\(host):5000").proxy == nil, "\(host) is loopback")
        }
        #expect(try decide(env, "https://s3.amazonaws.com").proxy?.host == "proxy")
    }

    @Test func theKeyOverridesTheEnvironment() throws {
        let env = ["HTTPS_PROXY": "http://env-proxy:3128", "NO_PROXY": "*"]
        let key = ProxySettings.Override.server(try HTTPProxy(parsing: "http://key-proxy:8080"))
        #expect(try decide(env, "https://s3.example.com", override: key).proxy?.host == "key-proxy", "NO_PROXY does not apply to the key")
        #expect(try decide(env, "http://127.0.0.1:9000", override: key).proxy?.host == "key-proxy", "the key is taken as said")
        #expect(try decide(env, "https://s3.example.com", override: .direct).proxy == nil)
        // With the key set, a malformed variable does not matter.
        #expect(try decide(["HTTPS_PROXY": "socks5://x:1"], "https://a.example", override: .direct).proxy == nil)
    }

    @Test func aMalformedVariableIsAnErrorNamingItWithoutThePassword() {
        do {
            _ = try ProxySettings(override: nil, environment: ["HTTPS_PROXY": "https://alice:Sup3rSecretPw@proxy:3128"])
            Issue.record("an https:// proxy was accepted")
        } catch {
            #expect(error.key == "proxy")
            #expect(error.message.contains("HTTPS_PROXY"), "\(error.message)")
            #expect(!error.message.contains("Sup3rSecretPw"), "\(error.message)")
        }
    }

    @Test func proxyURLs() throws {
        let full = try HTTPProxy(parsing: "http://al%40ice:p%3Ass%2Fw0rd@proxy.corp.test:3128/ignored")
        #expect(full.host == "proxy.corp.test" && full.port == 3128)
        #expect(full.username == "al@ice")
        #expect(full.password?.reveal() == "p:ss/w0rd")
        #expect(full.description == "http://al@ice@proxy.corp.test:3128")
        #expect(!String(describing: full).contains("w0rd"))
        #expect(try HTTPProxy(parsing: "proxy:8080") == HTTPProxy(host: "proxy", port: 8080), "no scheme: http")
        #expect(try HTTPProxy(parsing: "http://proxy").port == 80)
        #expect(try HTTPProxy(parsing: "http://[::1]:3128").host == "::1")
        #expect(try HTTPProxy(parsing: "http://[::1]:3128").description == "http://[::1]:3128")
        for bad in ["https://proxy:443", "socks5://proxy:1080", "ftp://proxy", "http://:3128", "http://proxy:0", "http://proxy:http", "http://[::1", "http://pro xy:1"] {
            #expect(throws: HTTPProxy.ParseError.self, "\(bad)") { try HTTPProxy(parsing: bad) }
        }
    }

    @Test func thePasswordIsRegisteredForRedaction() throws {
        let proxy = try HTTPProxy(parsing: "http://bob:Registered-Pr0xy-Pw@proxy:3128")
        #expect(Redactor.shared.redact("oops Registered-Pr0xy-Pw") == "oops <redacted>")
        // The Proxy-Authorization header carries base64("user:password").
        let header = Data("bob:Registered-Pr0xy-Pw".utf8).base64EncodedString()
        #expect(!Redactor.shared.redact("Proxy-Authorization: Basic \(header)").contains(header))
        #expect(proxy.clientProxy.authorization?.headerValue == "Basic \(header)")
        #expect(HTTPProxy.masked("http://bob:pw-here@proxy:1/x") == "http://<redacted>@proxy:1/x")
    }
}
