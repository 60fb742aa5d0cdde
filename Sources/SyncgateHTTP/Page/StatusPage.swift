import HTTPTypes
import Hummingbird

/// The status page: a static shell (HTML, a stylesheet, a script; no framework, served from the binary) that
/// reads everything it shows from the API and follows `/api/events`. The shell holds no data, so it is served
/// without the token; with a token configured the page asks for it once and keeps it in the tab's sessionStorage.
struct StatusPage: Sendable {
    /// Whether the server has a token (the page then asks for it before its first change; any read refused with
    /// 401 also makes it ask).
    let tokenRequired: Bool

    /// The paths of the shell, open to anyone who can connect (see ``AccessPolicy``).
    static let shellPaths: Set<String> = ["/", "/index.html", "/app.js", "/app.css", "/favicon.svg"]

    /// Only the page's own script and style, no inline code, no framing: an error text that slipped through as
    /// markup could not run.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    func register(on router: Router<BasicRequestContext>) {
        let html = PageHTML.text.replacingOccurrences(of: "{{token-required}}", with: tokenRequired ? "true" : "false")
        let page: @Sendable (Request, BasicRequestContext) async throws -> Response = { _, _ in
            Responses.make(html, type: "text/html; charset=utf-8", headers: [.contentSecurityPolicy: StatusPage.contentSecurityPolicy])
        }
        router.get("/", use: page)
        router.get("/index.html", use: page)
        router.get("/app.js") { _, _ -> Response in
            Responses.make(PageScript.text, type: "text/javascript; charset=utf-8", headers: [.cacheControl: "no-cache"])
        }
        router.get("/app.css") { _, _ -> Response in
            Responses.make(PageStyle.text, type: "text/css; charset=utf-8", headers: [.cacheControl: "no-cache"])
        }
        router.get("/favicon.svg") { _, _ -> Response in
            Responses.make(PageHTML.favicon, type: "image/svg+xml", headers: [.cacheControl: "max-age=86400"])
        }
    }
}
