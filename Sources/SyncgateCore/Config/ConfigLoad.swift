import Foundation

/// The errors found while loading a config: decoding goes on past an error in one item (a source, a destination,
/// a route, a top-level key) so that one run reports them all; it stops only where it cannot go on.
struct ConfigLoad {
    let decoder: ConfigDecoder
    var errors: [ConfigError] = []
    /// Key paths of items whose decoding an error cut short: the keys they did not get to are not unknown.
    var stopped: [String] = []

    init(decoder: ConfigDecoder) { self.decoder = decoder }

    mutating func note(_ error: ConfigError, stopping path: [ConfigKey]? = nil) {
        errors.append(error)
        if let path { stopped.append(ConfigKey.text(path)) }
    }

    /// Runs `body`; a config error is noted (and nil returned), unless it ends the load (a document too large).
    mutating func attempt<T>(_ path: [ConfigKey], _ body: () throws -> T) throws -> T? {
        do {
            return try body()
        } catch let error as ConfigError {
            if let fatal = decoder.fatal { throw fatal }
            note(error, stopping: path)
            return nil
        }
    }
}
