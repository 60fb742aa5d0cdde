import Foundation
import SyncgateCore
import SyncgateNetwork

/// The `sheets` destination's own keys in `plugins.yaml` (the core keys `name`, `type`, `retry`, ... are the core's).
///
/// Two modes: the Sheets API (`spreadsheet_id`, with `credentials_file` or Google's Application Default
/// Credentials) or an Apps Script web app (`apps_script_url`).
public struct SheetsConfig: Decodable, Sendable {
    public enum RowsMode: String, Sendable, Decodable {
        /// Each CSV row / JSON object / NDJSON line is one row.
        case records
        /// One row per file: name, size, sha256, modified, source, synced_at.
        case file
    }

    public enum ValueInput: String, Sendable, Decodable {
        case userEntered = "USER_ENTERED"
        case raw = "RAW"
    }

    /// What becomes of a text cell that Sheets would read as a formula (`=`, `+`, `-`, `@`, tab, CR first).
    public enum Formulas: String, Sendable, Decodable {
        /// Sent as text (a leading apostrophe; see ``FormulaGuard``).
        case text
        /// Sent as it is: with `USER_ENTERED` (or an Apps Script), Sheets evaluates it.
        case allow
    }

    /// The columns of a row in `rows: file` mode, in their default order.
    public static let fileColumns = ["name", "size", "sha256", "modified", "source", "synced_at"]
    /// Header of the row-id column syncgate adds as the first column when no `key` is configured.
    public static let rowIDColumn = "syncgate_row_id"

    public var spreadsheetID: String?
    public var range: String
    public var credentialsFile: String?
    public var rows: RowsMode
    public var columns: [String]?
    public var key: String?
    public var valueInput: ValueInput
    public var formulas: Formulas
    public var maxRowsPerRequest: Int
    public var apiBase: String
    public var appsScriptURL: String?
    public var secret: Secret?
    /// Writes allowed per `write_window` (Google's quota: 60 write requests per minute per user).
    public var writesPerWindow: Int
    public var writeWindow: Duration
    public var requestTimeout: Duration
    /// `proxy` and `ca_file` (docs/network.md), for the Sheets API, its token endpoint and an Apps Script alike.
    public var network: NetworkConfig

    enum CodingKeys: String, CodingKey {
        case spreadsheetID = "spreadsheet_id"
        case range
        case credentialsFile = "credentials_file"
        case rows
        case columns
        case key
        case valueInput = "value_input"
        case formulas
        case maxRowsPerRequest = "max_rows_per_request"
        case apiBase = "api_base"
        case appsScriptURL = "apps_script_url"
        case secret
        case secretFile = "secret_file"
        case writesPerMinute = "writes_per_minute"
        case writeWindow = "write_window"
        case requestTimeout = "request_timeout"
    }

    public var usesAppsScript: Bool { appsScriptURL != nil }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        spreadsheetID = try c.decodeIfPresent(String.self, forKey: .spreadsheetID)
        range = try c.decodeIfPresent(String.self, forKey: .range) ?? "Sheet1"
        credentialsFile = try c.decodeIfPresent(String.self, forKey: .credentialsFile)
        rows = try c.decodeIfPresent(RowsMode.self, forKey: .rows) ?? .records
        columns = try c.decodeIfPresent([String].self, forKey: .columns)
        key = try c.decodeIfPresent(String.self, forKey: .key)
        valueInput = try c.decodeIfPresent(ValueInput.self, forKey: .valueInput) ?? .userEntered
        formulas = try c.decodeIfPresent(Formulas.self, forKey: .formulas) ?? .text
        maxRowsPerRequest = try c.decodeIfPresent(Int.self, forKey: .maxRowsPerRequest) ?? 500
        apiBase = try c.decodeIfPresent(String.self, forKey: .apiBase) ?? "https://sheets.googleapis.com"
        appsScriptURL = try c.decodeIfPresent(String.self, forKey: .appsScriptURL)
        secret = try c.decodeSecretIfPresent(.secret, orFile: .secretFile)
        writesPerWindow = try c.decodeIfPresent(Int.self, forKey: .writesPerMinute) ?? 60
        writeWindow = try c.decodeIfPresent(ConfigDuration.self, forKey: .writeWindow)?.duration ?? .seconds(60)
        requestTimeout = try c.decodeIfPresent(ConfigDuration.self, forKey: .requestTimeout)?.duration ?? .seconds(60)
        network = try NetworkConfig(from: decoder)

        if appsScriptURL != nil {
            if spreadsheetID != nil {
                throw ConfigValueError("give either spreadsheet_id (Sheets API) or apps_script_url, not both", key: CodingKeys.appsScriptURL)
            }
            if credentialsFile != nil {
                throw ConfigValueError("credentials_file is for the Sheets API; an Apps Script web app authenticates with `secret`", key: CodingKeys.credentialsFile)
            }
        } else {
            guard let id = spreadsheetID else {
                throw ConfigValueError("a sheets destination needs spreadsheet_id (Sheets API) or apps_script_url")
            }
            if id.isEmpty || id.contains("/") {
                throw ConfigValueError("'\(id)' is not a spreadsheet id (the part of the sheet's URL after /d/)", key: CodingKeys.spreadsheetID)
            }
            // No credentials_file: Google's Application Default Credentials (see GoogleCredentialChain).
            if credentialsFile?.isEmpty == true {
                throw ConfigValueError("must be the path of a Google credentials file (or leave the key out to use Application Default Credentials)", key: CodingKeys.credentialsFile)
            }
            if secret != nil {
                throw ConfigValueError("secret is only for apps_script_url", key: CodingKeys.secret)
            }
        }
        if let url = appsScriptURL {
            guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), scheme == "https" || scheme == "http",
                parsed.host != nil
            else {
                throw ConfigValueError("'\(url)' is not an http(s) URL", key: CodingKeys.appsScriptURL)
            }
        }
        guard let base = URL(string: apiBase), let scheme = base.scheme?.lowercased(), scheme == "https" || scheme == "http",
            base.host != nil
        else {
            throw ConfigValueError("'\(apiBase)' is not an http(s) URL", key: CodingKeys.apiBase)
        }
        if (try? A1Range(parsing: range)) == nil {
            throw ConfigValueError("'\(range)' is not an A1 range (e.g. Sheet1, Builds!A:H, 'My sheet'!B2:F)", key: CodingKeys.range)
        }
        guard (1...10_000).contains(maxRowsPerRequest) else {
            throw ConfigValueError("must be between 1 and 10000", key: CodingKeys.maxRowsPerRequest)
        }
        guard writesPerWindow >= 1 else {
            throw ConfigValueError("must be >= 1", key: CodingKeys.writesPerMinute)
        }
        guard writeWindow > .zero else { throw ConfigValueError("must be > 0", key: CodingKeys.writeWindow) }
        guard requestTimeout > .zero else { throw ConfigValueError("must be > 0", key: CodingKeys.requestTimeout) }
        if let columns {
            if columns.isEmpty { throw ConfigValueError("must list at least one column", key: CodingKeys.columns) }
            if Set(columns).count != columns.count {
                throw ConfigValueError("lists a column twice", key: CodingKeys.columns)
            }
            if rows == .file, let unknown = columns.first(where: { !SheetsConfig.fileColumns.contains($0) }) {
                throw ConfigValueError(
                    "'\(unknown)' is not a column of rows: file (use \(SheetsConfig.fileColumns.joined(separator: ", ")))",
                    key: CodingKeys.columns)
            }
        }
        if let key {
            switch rows {
            case .records:
                guard let columns else {
                    throw ConfigValueError("key needs `columns` in rows: records mode, so that the key's column is known", key: CodingKeys.key)
                }
                guard columns.contains(key) else {
                    throw ConfigValueError("'\(key)' is not one of columns (\(columns.joined(separator: ", ")))", key: CodingKeys.key)
                }
            case .file:
                let names = columns ?? SheetsConfig.fileColumns
                guard names.contains(key) else {
                    throw ConfigValueError("'\(key)' is not one of the row's columns (\(names.joined(separator: ", ")))", key: CodingKeys.key)
                }
            }
        }
    }

    /// The columns of a `rows: file` row.
    public var effectiveFileColumns: [String] { columns ?? SheetsConfig.fileColumns }

    /// Index (within the row sent) of the column whose values make a row unique. With no `key`, syncgate adds
    /// the row-id column as the first one (index 0).
    public var keyColumnIndex: Int {
        guard let key else { return 0 }
        switch rows {
        case .records: return columns?.firstIndex(of: key) ?? 0
        case .file: return effectiveFileColumns.firstIndex(of: key) ?? 0
        }
    }

    /// Whether syncgate adds its row-id column (no `key` configured).
    public var addsRowID: Bool { key == nil }

    /// Whether Sheets parses the text it is sent (formulas, numbers, dates): `USER_ENTERED`, or an Apps Script,
    /// whose `setValues` parses like a user's typing.
    public var sheetsParsesText: Bool { usesAppsScript || valueInput == .userEntered }

    /// The guard of data cells: on where Sheets parses text, unless `formulas: allow`.
    public var formulaGuard: FormulaGuard { FormulaGuard(active: sheetsParsesText && formulas == .text) }

    /// The guard of syncgate's own cells (the row id, the header): on wherever Sheets parses text, whatever
    /// `formulas` says, so that they read back as they were sent.
    public var ownCellGuard: FormulaGuard { FormulaGuard(active: sheetsParsesText) }
}
