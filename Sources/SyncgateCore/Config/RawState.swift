import Foundation

/// The `state:` key as written: the path of an SQLite file, a PostgreSQL URL, or a mapping
/// `{url: postgres://..., password_file: PATH}` (docs/state.md).
struct RawState: Decodable {
    /// The path as written (SQLite), when the state is a file.
    var path: String?
    /// The PostgreSQL database, its password not yet looked for beyond the URL.
    var postgres: PostgresStateLocation?
    var passwordFile: SecretFile?

    /// No `state:` key: an SQLite file where ``GatewayConfig/defaultStateFile(baseDirectory:environment:)`` says.
    static let sqliteDefault = RawState()

    private init() {}

    enum CodingKeys: String, CodingKey {
        case url
        case passwordFile = "password_file"
    }

    init(from decoder: any Decoder) throws {
        if let node = (decoder as? NodeDecoder)?.node, case .mapping = node {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            let url = try c.decode(String.self, forKey: .url)
            guard PostgresStateLocation.isURL(url) else {
                throw ConfigValueError("must be a postgres:// URL (an SQLite state is written as a path: state: PATH)", key: CodingKeys.url)
            }
            do {
                postgres = try PostgresStateLocation.parse(url)
            } catch let error as ConfigValueError {
                throw ConfigValueError(error.message, key: CodingKeys.url)
            }
            passwordFile = try c.decodeIfPresent(SecretFile.self, forKey: .passwordFile)
            return
        }
        let text = try decoder.singleValueContainer().decode(String.self)
        if PostgresStateLocation.isURL(text) {
            postgres = try PostgresStateLocation.parse(text)
        } else {
            guard !text.isEmpty else { throw ConfigValueError("must be the path of the state file or a postgres:// URL") }
            path = text
        }
    }

    /// Where the state is: a PostgreSQL password from the URL, else `PGPASSWORD`, else `password_file`.
    func location(baseDirectory: URL, environment: [String: String]) -> StateLocation {
        guard var postgres else {
            guard let path else { return .sqlite(path: GatewayConfig.defaultStateFile(baseDirectory: baseDirectory, environment: environment)) }
            return .sqlite(path: GatewayConfig.resolve(path, against: baseDirectory))
        }
        if postgres.password == nil {
            if let value = environment["PGPASSWORD"], !value.isEmpty {
                postgres.password = Secret(value)
            } else {
                postgres.password = passwordFile?.secret
            }
        }
        return .postgres(postgres)
    }
}
