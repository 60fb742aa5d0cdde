import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import SyncgateCore

/// Signs and sends S3 requests over one lazily created `HTTPClient` (shut down by ``shutdown()``), and turns
/// non-2xx answers and transport failures into classified ``DestinationError``s.
final class S3Client: @unchecked Sendable {
    let settings: S3Settings
    let logger: Logger
    private let lock = NSLock()
    private var client: HTTPClient?
    private let signer: SigV4Signer
    /// Clock used to date requests (tests may pin it).
    var now: @Sendable () -> Date = { Date() }

    init(settings: S3Settings, logger: Logger) {
        self.settings = settings
        self.logger = logger
        self.signer = SigV4Signer(credentials: settings.credentials, region: settings.region, service: "s3")
    }

    /// What a request carries.
    enum Body {
        case none
        case bytes(Data)
        /// `length` bytes of the file from `offset`, streamed; `sha256` is their hex SHA-256, `md5` base64.
        case file(FileReader, offset: Int64, length: Int64, sha256: String, md5Base64: String, progress: @Sendable (Int64) -> Void)
    }

    struct Response {
        var status: Int
        var headers: HTTPHeaders
        var body: Data
    }

    private func httpClient() -> HTTPClient {
        lock.lock()
        defer { lock.unlock() }
        if let client { return client }
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(10), read: .seconds(120)),
            connectionPool: .init(idleTimeout: .seconds(30), concurrentHTTP1ConnectionsPerHostSoftLimit: 32),
            decompression: .disabled)
        configuration.httpVersion = .automatic
        // A refused connection fails the attempt at once: retrying is the delivery layer's job, not the client's.
        configuration.connectionPool.retryConnectionEstablishment = false
        let made = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        client = made
        return made
    }

    func shutdown() async {
        let current = takeClient()
        try? await current?.shutdown()
    }

    private func takeClient() -> HTTPClient? {
        lock.withLock {
            let current = client
            client = nil
            return current
        }
    }

    /// Sends one signed request. Returns the response of a 2xx answer (its body collected up to
    /// `maxResponseBytes`); throws a classified ``DestinationError`` otherwise. `context` starts error messages.
    func send(
        _ method: HTTPMethod, key: String?, query: [(name: String, value: String)] = [],
        headers extra: [(name: String, value: String)] = [], body: Body = .none, context: String,
        maxResponseBytes: Int = 8 << 20, timeout: TimeAmount = .seconds(300)
    ) async throws -> Response {
        let path = settings.path(key: key)
        let queryText = S3URIEncoding.canonicalQuery(query)
        var headers: [(name: String, value: String)] = [("Host", settings.hostHeader)]
        headers += extra
        let payloadHash: String
        var requestBody: HTTPClientRequest.Body?
        switch body {
        case .none:
            payloadHash = SigV4Signer.emptyPayloadHash
            if method == .PUT || method == .POST { headers.append(("Content-Length", "0")) }
        case .bytes(let data):
            payloadHash = SigV4Signer.hexSHA256(data)
            headers.append(("Content-Length", String(data.count)))
            requestBody = .bytes(ByteBuffer(bytes: data))
        case .file(let reader, let offset, let length, let sha256, let md5, let progress):
            payloadHash = sha256
            headers.append(("Content-Length", String(length)))
            headers.append(("Content-MD5", md5))
            let chunks = S3FileBody(reader: reader, offset: offset, length: length, chunkSize: 256 << 10, progress: progress)
            requestBody = .stream(chunks, length: .known(length))
        }
        headers.append(("x-amz-content-sha256", payloadHash))
        let signature = signer.sign(
            SigV4Signer.Request(method: method.rawValue, path: path, query: query, headers: headers, payloadHash: payloadHash),
            date: now())

        var request = HTTPClientRequest(url: settings.origin + path + (queryText.isEmpty ? "" : "?" + queryText))
        request.method = method
        for header in headers + signature.headers { request.headers.add(name: header.name, value: header.value) }
        request.body = requestBody

        let response: HTTPClientResponse
        var data = Data()
        do {
            response = try await httpClient().execute(request, timeout: timeout, logger: logger)
            let limit = (200..<300).contains(Int(response.status.code)) ? maxResponseBytes : 1 << 20
            let collected = try await response.body.collect(upTo: limit)
            data = Data(collected.readableBytesView)
        } catch let error as DestinationError {
            throw error
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw transportError(error, context: context)
        }
        let status = Int(response.status.code)
        guard (200..<300).contains(status) else {
            let retryAfter = response.headers.first(name: "Retry-After").flatMap { S3Client.retryAfter($0, now: now()) }
            let failure = S3ErrorResponse(status: status, body: data, retryAfter: retryAfter)
            throw failure.destinationError(context)
        }
        return Response(status: status, headers: response.headers, body: data)
    }

    /// `Retry-After`: delay-seconds or an HTTP date (RFC 9110); nil when unreadable.
    static func retryAfter(_ value: String, now: Date) -> Duration? {
        RetryAfter.parse(value, now: now)
    }

    /// A failure before an HTTP answer: connection refused or reset, timeouts, TLS. Classified by the core's
    /// rules (connection problems are retryable), worded for the ledger.
    func transportError(_ error: any Error, context: String) -> DestinationError {
        var failure = Classification.of(error).failureClass
        let text = String(describing: error)
        let lower = text.lowercased()
        if lower.contains("connection refused") || lower.contains("connecttimeout") || lower.contains("connection reset")
            || lower.contains("remoteconnectionclosed")
        {
            failure = .retryable()
        }
        // A server whose certificate does not verify will not verify on the next attempt either.
        if lower.contains("certificate") || lower.contains("handshake") { failure = .permanent }
        let detail: String
        if lower.contains("connection refused") {
            detail = "connection refused"
        } else if lower.contains("connecttimeout") {
            detail = "connect timed out"
        } else if lower.contains("remoteconnectionclosed") || lower.contains("connection reset") {
            detail = "the server closed the connection"
        } else {
            detail = text.count > 300 ? String(text.prefix(300)) + "..." : text
        }
        return DestinationError(
            failure, code: "connection",
            Redactor.shared.redact("\(context): cannot reach \(settings.origin): \(detail)"))
    }
}
