import Foundation
import Hummingbird

/// The body of `POST /api/retry` and `POST /api/forget`: `{"destination": "archive", "paths": ["a.txt"]}`, both
/// optional (no destination: every destination; no paths: every failed file). An empty body selects everything.
struct FileSelection: Decodable, Sendable, Equatable {
    var destination: String?
    var paths: [String]

    init(destination: String? = nil, paths: [String] = []) {
        self.destination = destination
        self.paths = paths
    }

    enum CodingKeys: String, CodingKey { case destination, paths }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        destination = try c.decodeIfPresent(String.self, forKey: .destination)
        paths = try c.decodeIfPresent([String].self, forKey: .paths) ?? []
    }

    /// The largest body read (413 beyond): a selection of a few hundred paths. It is read only once the request
    /// passed the access rules.
    static let maxBody = 64 << 10

    /// Reads the selection from a request's body; a malformed one is a 400, a body that is not JSON a 415.
    static func read(from request: Request) async throws -> FileSelection {
        var request = request
        let body = try await request.collectBody(upTo: maxBody)
        guard body.readableBytes > 0 else { return FileSelection() }
        let type = request.headers[.contentType]?.lowercased() ?? ""
        guard type.hasPrefix("application/json") else {
            throw HTTPError(.unsupportedMediaType, message: "the body must be JSON (Content-Type: application/json)")
        }
        do {
            let selection = try JSONDecoder().decode(FileSelection.self, from: Data(body.readableBytesView))
            if selection.destination?.isEmpty == true { throw HTTPError(.badRequest, message: "destination must not be empty") }
            return selection
        } catch let error as HTTPError {
            throw error
        } catch {
            throw HTTPError(.badRequest, message: #"the body must be {"destination": NAME, "paths": [PATH, ...]} (both optional)"#)
        }
    }
}
