import SyncgateCore
@testable import SyncgateHTTP
import Testing

/// The access rules decided without a server: every kind of request against every kind of listener.
@Suite("access policy")
struct AccessPolicyTests {
    static let token = "a-token-of-sixteen-or-more"

    func decide(_ kind: AccessPolicy.Kind, host: String = "127.0.0.1", token: String? = nil, sent: String? = nil,
                origin: String? = nil, requestHost: String? = "127.0.0.1:9464", site: String? = nil, proto: String? = nil) -> AccessPolicy.Decision {
        let policy = AccessPolicy(settings: HTTPSettings(host: host, port: 9464, token: token.map { Secret($0) }))
        return policy.decide(kind, .init(authorization: sent, origin: origin, host: requestHost, fetchSite: site, forwardedProto: proto))
    }

    func isAllowed(_ decision: AccessPolicy.Decision) -> Bool { decision == .allow }
    func isUnauthorized(_ decision: AccessPolicy.Decision) -> Bool { if case .unauthorized = decision { true } else { false } }
    func isForbidden(_ decision: AccessPolicy.Decision) -> Bool { if case .forbidden = decision { true } else { false } }

    @Test func loopbackWithoutAToken() {
        #expect(isAllowed(decide(.page)))
        #expect(isAllowed(decide(.read)))
        #expect(isAllowed(decide(.change)))
        #expect(isAllowed(decide(.change, origin: "http://127.0.0.1:9464")))
        #expect(isAllowed(decide(.change, origin: "http://localhost:9464", requestHost: "localhost:9464")))
        #expect(isAllowed(decide(.change, origin: "http://[::1]:9464", requestHost: "[::1]:9464")))
        #expect(isAllowed(decide(.change, site: "same-origin")))
        #expect(isForbidden(decide(.change, origin: "http://evil.example")))
        #expect(isForbidden(decide(.change, origin: "http://127.0.0.1:9465")))
        #expect(isForbidden(decide(.change, origin: "null")))
        #expect(isForbidden(decide(.change, origin: "http://127.0.0.1:9464/path")))
        #expect(isForbidden(decide(.change, site: "cross-site")))
        #expect(isForbidden(decide(.change, site: "same-site")))
        // DNS rebinding: a foreign name in Host, whatever the kind.
        for kind in [AccessPolicy.Kind.page, .read, .change] {
            #expect(isForbidden(decide(kind, requestHost: "evil.example:9464")))
            #expect(isForbidden(decide(kind, requestHost: "127.0.0.1.evil.example:9464")))
            #expect(isForbidden(decide(kind, requestHost: nil)))
        }
        #expect(isUnauthorized(decide(.read, sent: "Bearer " + AccessPolicyTests.token)), "no token is configured")
    }

    @Test func loopbackWithAToken() {
        let t = AccessPolicyTests.token
        #expect(isAllowed(decide(.page, token: t)))
        #expect(isAllowed(decide(.read, token: t)))
        #expect(isUnauthorized(decide(.change, token: t)))
        #expect(isAllowed(decide(.change, token: t, sent: "Bearer " + t)))
        #expect(isAllowed(decide(.change, token: t, sent: "  BEARER   " + t + " ")))
        #expect(isUnauthorized(decide(.change, token: t, sent: "Bearer " + t + t)))
        #expect(isUnauthorized(decide(.change, token: t, sent: "Bearer " + String(t.dropLast()))))
        #expect(isUnauthorized(decide(.change, token: t, sent: "Bearer")))
        #expect(isUnauthorized(decide(.change, token: t, sent: "Basic " + t)))
        #expect(isUnauthorized(decide(.read, token: t, sent: "Bearer wrong")), "a wrong token is refused even where none is needed")
        #expect(isForbidden(decide(.change, token: t, sent: "Bearer " + t, origin: "http://evil.example")))
        // A loopback listener answers only to loopback names, token or not (DNS rebinding of a page the token's
        // owner has open; issue 26): with or without a port, IPv4 127.0.0.0/8, [::1], localhost.
        for kind in [AccessPolicy.Kind.page, .read, .change] {
            #expect(isForbidden(decide(kind, token: t, sent: "Bearer " + t, requestHost: "evil.example:9464")))
            #expect(isForbidden(decide(kind, token: t, requestHost: "evil.example")))
        }
        for name in ["localhost", "localhost:9464", "127.0.0.1", "127.9.8.7:9464", "[::1]", "[::1]:9464"] {
            #expect(isAllowed(decide(.read, token: t, requestHost: name)), "\(name)")
        }
        // Another scheme is another origin: the listener speaks http.
        #expect(isForbidden(decide(.change, token: t, sent: "Bearer " + t, origin: "https://127.0.0.1:9464")))
        #expect(isForbidden(decide(.change, origin: "https://127.0.0.1:9464")))
        #expect(isForbidden(decide(.change, origin: "ftp://127.0.0.1:9464")))
        #expect(isAllowed(decide(.change, origin: "HTTP://127.0.0.1:9464")))
        // The default port is the same origin as the port written out.
        #expect(isAllowed(decide(.change, origin: "http://localhost", requestHost: "localhost:80")))
        #expect(isForbidden(decide(.change, origin: "http://localhost", requestHost: "localhost:9464")))
    }

    /// The loopback decision for `listen` is made on what the host resolves to, never on its spelling.
    @Test func theListenerIsJudgedByItsResolvedAddress() {
        for host in ["127.0.0.1", "127.1.2.3", "::1", "localhost"] {
            #expect(HTTPSettings(host: host, port: 9464).isLoopback, "\(host)")
        }
        // A name spelled like an address that does not resolve (or resolves elsewhere) is not loopback.
        for host in ["127.gateway.test", "127.0.0.1.gateway.test", "0.0.0.0", "::", "192.0.2.10"] {
            #expect(!HTTPSettings(host: host, port: 9464).isLoopback, "\(host)")
        }
    }

    @Test func awayFromLoopback() {
        let t = AccessPolicyTests.token
        for host in ["0.0.0.0", "192.0.2.10", "::", "gateway.example"] {
            #expect(isAllowed(decide(.page, host: host, token: t, requestHost: "gateway.example:9464")))
            #expect(isUnauthorized(decide(.read, host: host, token: t, requestHost: "gateway.example:9464")))
            #expect(isUnauthorized(decide(.change, host: host, token: t, requestHost: "gateway.example:9464")))
            #expect(isAllowed(decide(.read, host: host, token: t, sent: "Bearer " + t, requestHost: "gateway.example:9464")))
            // Behind a TLS proxy that says so, the page's origin is an https one; without it, https is another origin.
            #expect(isAllowed(decide(.change, host: host, token: t, sent: "Bearer " + t, origin: "https://gateway.example:9464",
                                     requestHost: "gateway.example:9464", proto: "https")))
            #expect(isAllowed(decide(.change, host: host, token: t, sent: "Bearer " + t, origin: "https://gateway.example",
                                     requestHost: "gateway.example", proto: "https")))
            #expect(isForbidden(decide(.change, host: host, token: t, sent: "Bearer " + t, origin: "https://gateway.example:9464",
                                       requestHost: "gateway.example:9464")))
            #expect(isForbidden(decide(.change, host: host, token: t, sent: "Bearer " + t, origin: "http://gateway.example:9464",
                                       requestHost: "gateway.example:9464", proto: "https")))
        }
    }

    @Test func namesAndTokens() {
        for name in ["localhost", "LOCALHOST", "app.localhost", "127.0.0.1", "127.1.2.3", "::1"] {
            #expect(AccessPolicy.isLoopbackName(name), "\(name)")
        }
        for name in ["evil.example", "127.0.0.1.evil.example", "127.0.0.256", "128.0.0.1", "0.0.0.0", "localhost.evil", ""] {
            #expect(!AccessPolicy.isLoopbackName(name), "\(name)")
        }
        #expect(AccessPolicy.hostName(ofAuthority: "[::1]:9464") == "::1")
        #expect(AccessPolicy.hostName(ofAuthority: "localhost:80") == "localhost")
        #expect(AccessPolicy.hostName(ofAuthority: "localhost") == "localhost")
        #expect(AccessPolicy.Origin(serialized: "http://127.0.0.1:9464") == AccessPolicy.Origin(scheme: "http", authority: "127.0.0.1:9464"))
        #expect(AccessPolicy.Origin(serialized: "https://[::1]")?.port == 443)
        #expect(AccessPolicy.Origin(serialized: "https://[::1]")?.host == "[::1]")
        #expect(AccessPolicy.Origin(serialized: "null") == nil)
        #expect(AccessPolicy.Origin(serialized: "file://") == nil)
        #expect(AccessPolicy.Origin(serialized: "http://a@127.0.0.1") == nil)
        #expect(AccessPolicy.Origin(serialized: "http://127.0.0.1:99999") == nil)

        let token = BearerToken(Secret(AccessPolicyTests.token))
        #expect("\(token)" == "<redacted>")
        #expect(token.matches(Array(AccessPolicyTests.token.utf8)))
        #expect(!token.matches([]))
        #expect(!token.matches(Array((AccessPolicyTests.token + AccessPolicyTests.token).utf8)), "a repeat is not the token")
        // Lengths 256 apart must not wrap to equal.
        let long = String(repeating: AccessPolicyTests.token, count: 1 + 256 / AccessPolicyTests.token.count)
        #expect(!token.matches(Array(long.utf8)))
        #expect(BearerToken.presented(in: "Bearer abc") == Array("abc".utf8))
        #expect(BearerToken.presented(in: "Token abc") == nil)
    }
}
