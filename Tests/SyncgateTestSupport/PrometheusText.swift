import Foundation

/// Prometheus text read as Prometheus reads it: by prometheus_client's own parser (Tests/PrometheusParser/
/// parse_metrics.py), which refuses what a scraper would. Families by name (a counter's without `_total`).
public enum PrometheusText {
    public struct Family: Decodable, Sendable {
        public struct Sample: Decodable, Sendable {
            public var name: String
            public var labels: [String: String]
            public var value: Double
        }

        public var name: String
        public var type: String
        public var help: String
        public var samples: [Sample]

        /// The value of the one sample named `sample` (the family's name by default) with these labels.
        public func value(_ labels: [String: String], sample: String? = nil) -> Double? {
            let matching = samples.filter { s in
                s.name == (sample ?? name) && labels.allSatisfy { s.labels[$0.key] == $0.value }
            }
            return matching.count == 1 ? matching[0].value : nil
        }
    }

    public struct Refused: Error, CustomStringConvertible {
        public var description: String
    }

    /// Parses `text`; throws when prometheus_client refuses it (a family twice, a malformed line).
    public static func parse(_ text: String) async throws -> [String: Family] {
        let dir = try TemporaryDirectory("sg-metrics")
        defer { dir.remove() }
        let file = try dir.write("metrics.txt", text)
        let script = TestPaths.packageRoot.appendingPathComponent("Tests/PrometheusParser/parse_metrics.py")
        let result = try await ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", script.path, file.path], timeout: 60)
        guard result.status == 0 else { throw Refused(description: "prometheus_client: \(result.stderr)") }
        let families = try JSONDecoder().decode([Family].self, from: Data(result.stdout.utf8))
        return Dictionary(families.map { ($0.name, $0) }) { first, _ in first }
    }
}
