import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import SyncgateCore
import SyncgateNetwork

/// The plugin's HTTP client, created on first use (the factory does no network work) and shut down by
/// ``shutdown()`` (a later request creates a new one).
///
/// - Redirects are never followed by the client: the callers decide (the Sheets API and the token endpoint do not
///   follow them at all, so a bearer token never goes to another host; the Apps Script client follows only the
///   way Google's flow needs, see ``AppsScriptClient``).
/// - A connection that cannot be made fails the request at once instead of being tried again until the request's
///   deadline, so that an unreachable host is reported as such (``TransportError/Phase/connect``).
/// - Answer bodies are bounded: a success's by `maxBody` (more is an error), an error answer's by
///   ``errorBodyLimit`` (the rest is not read).
/// - The destination talks to several hosts (the API, the token endpoint, an Apps Script and the host it redirects
///   to), and ``NetworkSettings`` may send some through a proxy and others directly (`NO_PROXY`): there is one client
///   per route, made by ``HTTPClientFactory`` the first time a host needs it; every client trusts the destination's
///   CAs.
actor HTTPTransport {
    /// How much of an error answer's body is kept (enough for any error message; the rest is dropped unread).
    static let errorBodyLimit = 64 << 10

    /// A client per proxy (nil: direct).
    private var clients: [HTTPProxy?: HTTPClient] = [:]
    private let connectTimeout: TimeAmount
    let network: NetworkSettings
    private let logger: Logger

    init(connectTimeout: Duration = .seconds(10), network: NetworkSettings = .direct, logger: Logger = Logger(label: "syncgate.sheets")) {
        self.connectTimeout = .milliseconds(Int64(connectTimeout.seconds * 1000))
        self.network = network
        self.logger = logger
    }

    deinit {
        // finish() was not called (e.g. the destination was dropped after `validate`): shut the clients down
        // without waiting, rather than leak them.
        for client in clients.values { client.shutdown { _ in } }
    }

    /// The client for `url`'s route, and the proxy it goes through.
    private func current(for url: URL) -> (client: HTTPClient, proxy: HTTPProxy?) {
        let proxy = network.proxy.decision(for: url).proxy
        if let client = clients[proxy] { return (client, proxy) }
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        configuration.timeout.connect = connectTimeout
        configuration.decompression = .disabled
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration = HTTPClientFactory.configuration(configuration, for: url, network: network)
        logger.debug("HTTP connections", metadata: ["host": "\(url.host ?? "")", "route": "\(network.describe(url))"])
        let made = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        clients[proxy] = made
        return (made, proxy)
    }

    /// Performs one request. Throws ``TransportError`` when no answer came back, `CancellationError` when the task
    /// was cancelled. `beforeBody` (with a body) is asked right before the body goes out (``GatedBody``); what it
    /// throws is thrown as is, and then nothing of the body was sent.
    func send(
        method: HTTPMethod, url: String, headers: [(String, String)] = [], body: [UInt8]? = nil, timeout: Duration,
        maxBody: Int = 8 << 20, beforeBody: (@Sendable () throws -> Void)? = nil
    ) async throws -> HTTPAnswer {
        guard let parsed = URL(string: url) else {
            throw TransportError(url: HTTPTransport.redactQuery(url), underlying: "not a URL", phase: .connect)
        }
        let (client, proxy) = current(for: parsed)
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        var gated: GatedBody?
        if let body {
            if let beforeBody {
                gated = GatedBody(bytes: ByteBuffer(bytes: body), check: beforeBody)
                request.body = .stream(gated!, length: .known(Int64(body.count)))
            } else {
                request.body = .bytes(ByteBuffer(bytes: body))
            }
            request.headers.replaceOrAdd(name: "content-length", value: String(body.count))
        }
        let amount = TimeAmount.milliseconds(max(1, Int64(timeout.seconds * 1000)))
        do {
            let response = try await client.execute(request, timeout: amount)
            let status = Int(response.status.code)
            let success = (200..<300).contains(status)
            let limit = success ? maxBody : HTTPTransport.errorBodyLimit
            var bytes: [UInt8] = []
            var truncated = false
            for try await chunk in response.body {
                let room = limit - bytes.count
                if chunk.readableBytes > room {
                    if success {
                        throw TransportError(
                            url: HTTPTransport.redactQuery(url), underlying: "the answer is larger than \(limit) bytes", phase: .exchange)
                    }
                    bytes += chunk.readableBytesView.prefix(room)
                    truncated = true
                    break  // leaving the body unread closes the connection
                }
                bytes += chunk.readableBytesView
            }
            return HTTPAnswer(status: status, headers: response.headers, body: bytes, truncated: truncated)
        } catch let error as TransportError {
            throw error
        } catch where gated?.refusal != nil {
            throw gated!.refusal!
        } catch let error as CancellationError {
            throw error
        } catch let error as HTTPClientError where error == .cancelled {
            throw CancellationError()
        } catch {
            let tls = TLSFailureHint.text(for: error, trust: network.trust, keys: "ca_file or SSL_CERT_FILE")
            throw TransportError(
                url: HTTPTransport.redactQuery(url), underlying: Redactor.shared.snippet(tls ?? String(describing: error)),
                phase: TransportError.phase(of: error), kind: TransportError.kind(of: error), proxy: proxy)
        }
    }

    func shutdown() async {
        let all = clients.values
        clients = [:]
        for client in all { try? await client.shutdown() }
    }

    /// The URL without its query (which may hold a key) for messages.
    static func redactQuery(_ url: String) -> String {
        guard let q = url.firstIndex(of: "?") else { return url }
        return String(url[..<q])
    }
}
