import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import SyncgateCore
import SyncgateNetwork
import Synchronization

/// Signs and sends S3 requests over one lazily created `HTTPClient` (shut down by ``shutdown()``), and turns
/// non-2xx answers and transport failures into classified ``DestinationError``s.
final class S3Client: Sendable {
    let settings: S3Settings
    let logger: Logger
    /// Made at the first request (under the lock, so once), taken by ``shutdown()``.
    private let client = Mutex<HTTPClient?>(nil)
    /// The credentials each request is signed with (renewed when they are fetched ones).
    private let credentials: AWSCredentialProvider
    /// Clock used to date requests.
    let now: @Sendable () -> Date = { Date() }

    /// The proxy requests go through (nil: direct), decided once for the endpoint (docs/network.md).
    let proxy: HTTPProxy?

    init(settings: S3Settings, logger: Logger) {
        self.settings = settings
        self.logger = logger
        self.credentials = AWSCredentialProvider(source: settings.credentialSource, region: settings.region, network: settings.network)
        self.proxy = settings.network.proxy.decision(scheme: settings.scheme, host: settings.connectionHost, port: settings.port).proxy
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

    /// How long a request may take in total (besides the idle bounds every request has: no answer, and no
    /// progress of an upload, for longer than ``S3Settings/requestTimeout``).
    enum TimeLimit: Sendable {
        /// No file body (HEAD, list, delete, create, abort): ``S3Settings/requestTimeout``.
        case request
        /// A file body of this many bytes: ``S3Settings/requestTimeout`` plus the time to send it at 8 KiB/s (the
        /// core's `attempt_timeout` normally ends a slow upload long before).
        case body(Int64)
        /// CompleteMultipartUpload: ``S3Settings/completeTimeout``.
        case complete

        func duration(_ settings: S3Settings) -> Duration {
            switch self {
            case .request: settings.requestTimeout
            case .body(let length): settings.requestTimeout + .seconds(length / 8192)
            case .complete: max(settings.requestTimeout, S3Settings.completeTimeout)
            }
        }
    }

    /// The most of an error answer's body that is read (the code and message come first); the rest is dropped.
    static let errorBodyLimit = 64 << 10

    private func httpClient() -> HTTPClient {
        client.withLock { client in
            if let client { return client }
            let made = makeClient()
            client = made
            return made
        }
    }

    private func makeClient() -> HTTPClient {
        let idle = TimeAmount.nanoseconds(Int64(settings.requestTimeout.seconds * 1e9))
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: min(.seconds(10), idle), read: idle, write: idle),
            connectionPool: .init(idleTimeout: .seconds(30), concurrentHTTP1ConnectionsPerHostSoftLimit: 32),
            decompression: .disabled)
        configuration.httpVersion = .automatic
        // A refused connection fails the attempt at once: retrying is the delivery layer's job, not the client's.
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration = HTTPClientFactory.configuration(
            configuration, scheme: settings.scheme, host: settings.connectionHost, port: settings.port, network: settings.network)
        if let origin = URL(string: settings.origin) {
            logger.debug("S3 connections", metadata: ["endpoint": "\(settings.origin)", "route": "\(settings.network.describe(origin))"])
        }
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// A destination dropped without ``S3Destination/finish()`` (an error path) still closes its connections.
    deinit {
        if let client = client.withLock({ $0 }) { client.shutdown { _ in } }
    }

    func shutdown() async {
        let current = takeClient()
        try? await current?.shutdown()
    }

    private func takeClient() -> HTTPClient? {
        client.withLock { client in
            defer { client = nil }
            return client
        }
    }

    /// Sends one signed request. Returns the response of a 2xx answer (its body collected up to
    /// `maxResponseBytes`); throws a classified ``DestinationError`` otherwise (``CancellationError`` when the
    /// task is cancelled, ``FileChangedError`` when the file changed while it was sent). `context` starts error
    /// messages. The request ends within `limit` (by default ``TimeLimit/request``, or ``TimeLimit/body(_:)`` for
    /// a file body).
    func send(
        _ method: HTTPMethod, key: String?, query: [(name: String, value: String)] = [],
        headers extra: [(name: String, value: String)] = [], body: Body = .none, context: String,
        maxResponseBytes: Int = 8 << 20, limit: TimeLimit? = nil
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
        let signer = SigV4Signer(credentials: try await credentials.current(), region: settings.region, service: "s3")
        let signature = signer.sign(
            SigV4Signer.Request(method: method.rawValue, path: path, query: query, headers: headers, payloadHash: payloadHash),
            date: now())

        var request = HTTPClientRequest(url: settings.origin + path + (queryText.isEmpty ? "" : "?" + queryText))
        request.method = method
        for header in headers + signature.headers { request.headers.add(name: header.name, value: header.value) }
        request.body = requestBody

        var effectiveLimit = limit ?? .request
        if limit == nil, case .file(_, _, let length, _, _, _) = body { effectiveLimit = .body(length) }
        let timeLimit = effectiveLimit.duration(settings)
        let prepared = request
        let answer: Answer
        do {
            answer = try await S3Client.withDeadline(timeLimit) { [self] in
                try await exchange(prepared, deadline: timeLimit, maxResponseBytes: maxResponseBytes, context: context)
            }
        } catch let error as DestinationError {
            throw error
        } catch let error as FileChangedError {
            throw error
        } catch {
            if Task.isCancelled || error is CancellationError { throw CancellationError() }
            throw S3TransportFailure.error(
                error, context: context, origin: settings.origin, idleLimit: settings.requestTimeout, proxy: proxy, trust: settings.network.trust)
        }
        guard (200..<300).contains(answer.status) else {
            let retryAfter = answer.headers.first(name: "Retry-After").flatMap { S3Client.retryAfter($0, now: now()) }
            let failure = S3ErrorResponse(
                status: answer.status, body: answer.body, retryAfter: retryAfter,
                bucketRegion: answer.headers.first(name: "x-amz-bucket-region"), configuredRegion: settings.region)
            throw failure.destinationError(context)
        }
        return Response(status: answer.status, headers: answer.headers, body: answer.body)
    }

    private struct Answer: Sendable {
        var status: Int
        var headers: HTTPHeaders
        var body: Data
    }

    /// Sends the request and reads the answer: a 2xx body up to `maxResponseBytes` (more is an error: the
    /// server is not answering what was asked), an error body up to ``errorBodyLimit`` (the rest is dropped, and
    /// the answer is classified by its status and what was read).
    private func exchange(_ request: HTTPClientRequest, deadline: Duration, maxResponseBytes: Int, context: String) async throws -> Answer {
        // The client's own deadline is a fallback, later than ``withDeadline(_:_:)``'s, which names the limit.
        let fallback = NIODeadline.now() + .nanoseconds(Int64((deadline.seconds + 2) * 1e9))
        let response = try await httpClient().execute(request, deadline: fallback, logger: logger)
        let status = Int(response.status.code)
        let success = (200..<300).contains(status)
        let limit = success ? maxResponseBytes : S3Client.errorBodyLimit
        var body = Data()
        for try await chunk in response.body {
            let room = limit - body.count
            if chunk.readableBytes > room {
                guard success else {
                    body.append(contentsOf: chunk.readableBytesView.prefix(room))
                    break  // dropping the rest closes the connection
                }
                throw DestinationError.retryable(
                    "\(context): the answer is larger than \(limit) bytes; \(settings.origin) is not answering what was asked",
                    code: "ResponseTooLarge")
            }
            body.append(contentsOf: chunk.readableBytesView)
        }
        return Answer(status: status, headers: response.headers, body: body)
    }

    /// Runs `operation`, cancelled when `limit` passes (it then throws ``S3RequestTimeout``) or when the caller is.
    static func withDeadline<T: Sendable>(_ limit: Duration, _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T.self) { group in
            group.addTask { try await operation() }
            group.addTask {
                try await Task.sleep(for: limit)
                throw S3RequestTimeout(limit: limit)
            }
            defer { group.cancelAll() }
            return try await group.next()!
        }
    }

    /// `Retry-After`: delay-seconds or an HTTP date (RFC 9110); nil when unreadable.
    static func retryAfter(_ value: String, now: Date) -> Duration? {
        RetryAfter.parse(value, now: now)
    }
}
