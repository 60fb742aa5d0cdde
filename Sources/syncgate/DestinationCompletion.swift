import ArgumentParser
import Foundation
import Logging
import SyncgateCore

/// Shell completion of `--destination NAME`: the destinations of the config the command line would read (its
/// `--config`, or the one found as every command finds it, ``ConfigDiscovery``). Nothing when there is no config
/// or it does not load; nothing is logged or written.
enum DestinationCompletion {
    static let kind = CompletionKind.custom { words, _, prefix in names(words: words, prefix: prefix) }

    static func names(words: [String], prefix: String) -> [String] {
        var explicit: String? = nil
        for (index, word) in words.enumerated() {
            if word == "--config", index + 1 < words.count { explicit = words[index + 1] }
            if word.hasPrefix("--config=") { explicit = String(word.dropFirst("--config=".count)) }
        }
        let silent = Logger(label: "syncgate") { _ in SwiftLogNoOpLogHandler() }
        guard let file = try? ConfigDiscovery().locate(explicit: explicit),
              let config = try? GatewayConfig.load(path: file.path, registry: BuiltinPlugins.registry, logger: silent, readingLedgerOnly: true)
        else { return [] }
        return config.destinations.map(\.name).filter { $0.hasPrefix(prefix) }
    }
}
