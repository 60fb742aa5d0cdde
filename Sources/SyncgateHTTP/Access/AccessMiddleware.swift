import HTTPTypes
import Hummingbird
import Logging

/// Applies the ``AccessPolicy`` to every request before it is routed, and adds the headers every answer carries
/// (no sniffing, no framing, no referrer).
struct AccessMiddleware<Context: RequestContext>: RouterMiddleware {
    let policy: AccessPolicy
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let credentials = AccessPolicy.Credentials(
            authorization: request.headers[.authorization], origin: request.headers[.origin],
            host: request.head.authority, fetchSite: request.headers[HTTPField.Name.secFetchSite],
            forwardedProto: request.headers[HTTPField.Name.xForwardedProto]
        )
        var response: Response
        switch policy.decide(AccessMiddleware.kind(of: request), credentials) {
        case .allow:
            do {
                response = try await next(request, context)
            } catch let error as HTTPError {
                response = try error.response(from: request, context: context)
            }
        case .unauthorized(let reason):
            logger.debug("refused", metadata: ["method": "\(request.method)", "path": "\(request.uri.path)", "status": .stringConvertible(401), "why": "\(reason)"])
            response = try HTTPError(.unauthorized, headers: [.wwwAuthenticate: "Bearer realm=\"syncgate\""], message: reason)
                .response(from: request, context: context)
        case .forbidden(let reason):
            logger.debug("refused", metadata: ["method": "\(request.method)", "path": "\(request.uri.path)", "status": .stringConvertible(403), "why": "\(reason)"])
            response = try HTTPError(.forbidden, message: reason).response(from: request, context: context)
        }
        response.headers[.xContentTypeOptions] = "nosniff"
        response.headers[.xFrameOptions] = "DENY"
        response.headers[.referrerPolicy] = "no-referrer"
        if response.headers[.cacheControl] == nil { response.headers[.cacheControl] = "no-store" }
        return response
    }

    /// What a request asks for: the page's shell, a change (any POST), or data (everything else).
    static func kind(of request: Request) -> AccessPolicy.Kind {
        if request.method == .post { return .change }
        if request.method == .get || request.method == .head, StatusPage.shellPaths.contains(request.uri.path) { return .page }
        return .read
    }
}
