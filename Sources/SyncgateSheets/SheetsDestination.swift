import Crypto
import Foundation
import Logging
import SyncgateCore
import SyncgateNetwork

/// Delivers files as rows of a Google spreadsheet, through the Sheets API v4 (`values.append`, authorised by a
/// service account, a gcloud application-default login or the GCE metadata server) or through an Apps Script web app.
///
/// `rows: records` makes each CSV row / JSON object / NDJSON line one row; `rows: file` makes one row per file.
/// Appends are made exactly once: every row carries a key (the configured `key` column, or the row id syncgate
/// adds as the first column), the key column is read once per run and after any append whose outcome is
/// unknown, and rows whose key is already in the sheet are not sent again.
public struct SheetsDestination: Destination {
    public static let registration: PluginRegistration = {
        var registration = PluginRegistration(
            type: "sheets", summary: "Google Sheets rows (Sheets API v4 values.append, or an Apps Script web app)"
        , decode: { setup in
            var config = try setup.decode(SheetsConfig.self)
            if let file = config.credentialsFile {
                config.credentialsFile = setup.resolvePath(file)
                setup.readsSecretFile(setup.resolvePath(file))
            }
            let decoded = config
            // Where the rows go: the web app (its URL, a capability, is compared as a digest and never shown), or the
            // spreadsheet and its sheet (the range's columns may change without the rows being elsewhere).
            let sheet = (try? A1Range(parsing: config.range))?.sheet ?? config.range
            if let url = config.appsScriptURL {
                setup.deliversTo("an Apps Script web app at \(URL(string: url)?.host ?? "its URL")", identity: url)
            } else if let id = config.spreadsheetID {
                setup.deliversTo("spreadsheet \(id), sheet \(sheet)", identity: [config.apiBase, id, sheet].joined(separator: "\u{0}"))
            }
            let network: NetworkSettings
            do {
                network = try NetworkSettings.resolve(
                    config.network, caFile: config.network.caFile.map(setup.resolvePath), environment: setup.environment, awsCABundle: false)
            } catch let error as NetworkSettingsError {
                throw setup.invalid(error.key, error.message)
            }
            /// `validate`: how it connects, when a proxy or a CA bundle is set (after the credentials' lines).
            func describeNetwork() {
                if network.isSet, let url = URL(string: config.appsScriptURL ?? config.apiBase) { setup.describe("network: \(network.describe(url))") }
            }
            guard !config.usesAppsScript else {
                describeNetwork()
                return { SheetsDestination(name: setup.name, config: decoded, credentials: nil, tokenCache: nil, network: network, logger: setup.logger) }
            }
            let source: GoogleCredentialSource
            do {
                source = try GoogleCredentialChain.resolve(credentialsFile: config.credentialsFile, environment: setup.environment)
            } catch let failure as GoogleCredentialChain.Failure {
                // `status` and `forget` build no destination: credentials that cannot be found are no error there.
                guard setup.readsLedgerOnly else { throw setup.invalid(failure.key, failure.description) }
                source = .metadataServer(baseURL: GoogleCredentialChain.metadataBaseURL(setup.environment), lookedAt: [failure.description])
            }
            if case .file(let path, _) = source { setup.warnIfReadableByOthers(path, what: "Google credentials file") }
            let cache = GoogleTokenCache(stateDirectory: setup.stateDirectory)
            if setup.checksFiles {
                // `validate`: a credentials file must read, be of a supported type and its key parse (no network).
                let credentials: GoogleTokenFetcher.Credentials
                do {
                    credentials = try OAuthTokenProvider.credentials(of: source)
                } catch let error as DestinationError {
                    throw setup.invalid("credentials_file", error.message)
                }
                setup.describe("credentials: " + (credentials.fileType.map { source.description(type: $0) } ?? source.description))
                setup.describe("token cache: \(cache.directory) (files of mode 0600)")
            }
            describeNetwork()
            return { SheetsDestination(name: setup.name, config: decoded, credentials: source, tokenCache: cache, network: network, logger: setup.logger) }
        })
        registration.deletes = false  // rows are only appended
        return registration
    }()

    public let name: String
    public let config: SheetsConfig
    /// The proxy and CAs of every request (docs/network.md).
    public let network: NetworkSettings
    let logger: Logger
    let transport: HTTPTransport
    let tokens: OAuthTokenProvider?
    let limiter: WriteRateLimiter
    let dedup = RowDeduplicator()
    /// Asked right before each append: a frozen or cut-off instance whose fence lapsed sends nothing more.
    let writeFence = WriteFence()
    let header = SheetHeader()
    let builder: RowBuilder

    /// A destination whose Sheets API requests are authorised by `credentials` (nil in Apps Script mode), with their
    /// access tokens kept in `tokenCache` between runs when it is given; `network`: its proxies and CAs.
    init(
        name: String, config: SheetsConfig, credentials: GoogleCredentialSource?, tokenCache: GoogleTokenCache?,
        network: NetworkSettings = .direct, logger: Logger = Logger(label: "syncgate.sheets")
    ) {
        self.name = name
        self.config = config
        self.network = network
        self.logger = logger
        let transport = HTTPTransport(network: network, logger: logger)
        self.transport = transport
        if let credentials, !config.usesAppsScript {
            tokens = OAuthTokenProvider(
                source: credentials, transport: transport, timeout: config.requestTimeout, cache: tokenCache, logger: logger)
        } else {
            tokens = nil
        }
        limiter = WriteRateLimiter(limit: config.writesPerWindow, window: config.writeWindow)
        builder = RowBuilder(config: config)
    }

    var range: A1Range { (try? A1Range(parsing: config.range)) ?? (try! A1Range(parsing: "Sheet1")) }

    var sheets: SheetsClient? {
        guard let tokens, let id = config.spreadsheetID else { return nil }
        return SheetsClient(apiBase: config.apiBase, spreadsheetID: id, tokens: tokens, transport: transport, timeout: config.requestTimeout)
    }

    var appsScript: AppsScriptClient? {
        guard let url = config.appsScriptURL else { return nil }
        return AppsScriptClient(url: url, secret: config.secret, transport: transport, timeout: config.requestTimeout)
    }

    // MARK: Destination

    /// The duplicate check reads the key column, then appends: one instance of a fleet at a time.
    public var needsOneWriter: Bool { true }

    public func useWriteFence(_ refusal: @escaping @Sendable () -> (any Error)?) {
        writeFence.use(refusal)
    }

    public func writesUnderLead(epoch: Int64) async {
        await dedup.writes(underLead: epoch)
    }

    public func upload(_ item: UploadItem, progress: @escaping @Sendable (Int64) -> Void) async throws -> Receipt {
        progress(0)
        var delivery = Delivery(item: item)
        switch config.rows {
        case .file:
            let row = builder.fileRow(item: item, syncedAt: Date())
            try await send([row], columns: config.effectiveFileColumns, delivery: &delivery)
        case .records:
            guard let format = RecordFormat.forExtension(item.fileExtension) else {
                throw DestinationError.permanent(
                    "\(item.relativePath): rows: records reads .csv, .json, .ndjson and .jsonl files, not '.\(item.fileExtension)' (use rows: file for one row per file)",
                    code: "unsupported-format")
            }
            // Pass 1 checks every record, so that a malformed line fails the file before any row is sent.
            _ = try await forEachBatch(item, format: format) { _, _, _ in }
            // Pass 2 streams the file again and sends it batch by batch.
            let total = try await forEachBatch(item, format: format) { rows, columns, consumed in
                try await send(rows, columns: columns, delivery: &delivery)
                progress(consumed)
            }
            delivery.records = total
        }
        await dedup.delivered(file: item.remoteName)
        progress(item.size)
        return Receipt(remoteName: item.remoteName, detail: delivery.detail)
    }

    public func delete(remoteName: String) async throws {
        throw DestinationError.permanent(
            "the sheets destination only appends rows; delete the rows of \(remoteName) in the spreadsheet itself", code: "unsupported")
    }

    public func list() async throws -> RemoteListing {
        guard let sheets, config.addsRowID else { return RemoteListing(entries: []) }
        let headerRow = try await header.header(columns: nil, read: readHeader(sheets), write: nil)
        guard case .success(let layout) = ColumnLayout.mapping(header: headerRow, columns: [SheetsConfig.rowIDColumn]) else {
            return RemoteListing(entries: [])
        }
        let ids = try await sheets.column(range: range.columnBelowHeader(at: layout.positions[0]))
        var names: [String] = []
        var seen = Set<String>()
        for id in ids {
            guard let at = id.lastIndex(of: "@") else { continue }
            let name = String(id[..<at])
            if seen.insert(name).inserted { names.append(name) }
        }
        return RemoteListing(entries: names.map { RemoteListing.Entry(name: $0) })
    }

    /// `syncgate check`: the row-id column (the key column syncgate writes) names the files whose rows are in the sheet;
    /// a file whose rows are all gone is missing. A sheet keyed by the records' own `key`, or written through an Apps
    /// Script, names no files: it cannot be verified (a row deleted there is often deliberate).
    public func verificationListing() async throws -> RemoteListing {
        guard sheets != nil, config.addsRowID else {
            throw DestinationError.permanent(
                "cannot be verified: only a sheet written through the Sheets API with syncgate's row ids (no `key`) names the files it holds",
                code: VerificationFinding.notVerifiable)
        }
        return try await list()
    }

    /// Every error the plugin throws is a ``DestinationError`` with its class and scope (see docs/sheets.md,
    /// "Errors"); what else reaches here is classified the same way.
    public func classify(_ error: any Error) -> Classification {
        switch error {
        case let error as DestinationError: error.classification
        case let error as WriteOutcomeUnknown: error.error.classification
        case let error as TransportError: error.destinationError("request").classification
        default: Classification.of(error)
        }
    }

    /// Sheets API: a token, then `spreadsheets.get` with the field mask `spreadsheetId` (the key is usable, the
    /// spreadsheet exists and is shared with the service account). Apps Script: the web app's host answers (the
    /// script itself is not run; see ``AppsScriptClient/probe()``).
    public func probe() async throws {
        if let sheets {
            _ = try await sheets.metadata()
        } else if let appsScript {
            try await appsScript.probe()
        }
    }

    /// Hex SHA-256 of the credentials file's content (`unreadable` when it cannot be read; for the metadata server,
    /// of its address), or of the Apps Script secret, followed by the network settings' own fingerprint when there
    /// are any (a proxy, `NO_PROXY`, a CA bundle): it changes when the credentials or those do, and tells nothing of
    /// them.
    public var settingsFingerprint: String {
        let credentials = credentialsFingerprint
        let networkPart = network.fingerprint
        return networkPart.isEmpty ? credentials : credentials + ":" + networkPart
    }

    private var credentialsFingerprint: String {
        if config.usesAppsScript {
            guard let secret = config.secret else { return "" }
            return SheetsDestination.hex(SHA256.hash(data: Array(secret.reveal().utf8)))
        }
        return tokens?.source.fingerprint ?? ""
    }

    /// Where the Sheets API credentials come from (a file and the link of the chain that named it, or the metadata
    /// server), never what they are; nil in Apps Script mode.
    public var credentialsDescription: String? { tokens?.source.description }

    static func hex(_ digest: SHA256.Digest) -> String {
        digest.map { String(format: "%02x", $0) }.joined()
    }

    public func finish() async {
        await tokens?.shutdown()
        await transport.shutdown()
    }

    // MARK: The header

    /// Reads the header row: the range's first row, from its first column.
    func readHeader(_ sheets: SheetsClient) -> @Sendable () async throws -> [String] {
        let headerRange = range.headerRow
        let dropLeft = range.headerRowIsWholeRow ? range.firstColumn : 0
        return { Array(try await sheets.firstRow(range: headerRange).dropFirst(dropLeft)) }
    }

    /// Where the columns of a file's rows land: mapped by name onto the sheet's header row, which is read once per
    /// run, and written (with the row-id column when syncgate adds it) when the sheet is empty.
    ///
    /// A column the header lacks is an error, and nothing of the file is appended: about the destination
    /// (blocked) when the column is the configuration's (`columns`, `key`, the row id, `rows: file`), about the
    /// file when it was taken from the file itself (its CSV header, its first record).
    func layout(recordColumns: [String], sheets: SheetsClient) async throws -> ColumnLayout {
        let names = builder.header(recordColumns: recordColumns)
        if let width = range.width, names.count > width {
            throw DestinationError.blocked(
                "range \(config.range) holds \(width) column\(width == 1 ? "" : "s"), the rows have \(names.count) (\(names.joined(separator: ", "))); widen range",
                code: "range-too-narrow")
        }
        let guarding = config.ownCellGuard
        let appendRange = config.range
        let valueInput = config.valueInput
        let headerRow = try await header.header(columns: names, read: readHeader(sheets)) { columns in
            let cells = columns.map { guarding.cell(.string($0)) }
            do {
                _ = try await self.limited { try await sheets.append(range: appendRange, rows: [cells], valueInput: valueInput) }
            } catch let error as WriteOutcomeUnknown {
                throw error.error
            }
            self.logger.info("wrote the header row of \(appendRange): \(columns.joined(separator: ", "))", metadata: ["destination": "\(self.name)"])
        }
        switch ColumnLayout.mapping(header: headerRow, columns: names) {
        case .success(let layout):
            return layout
        case .failure(let missing):
            let shown = headerRow.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.joined(separator: ", ")
            let start = "the header row of \(config.range) (\(shown)) has no column '\(missing.name)'"
            if missing.name == SheetsConfig.rowIDColumn && config.addsRowID {
                throw DestinationError.blocked(
                    "\(start), where syncgate keeps each row's id: add a column '\(SheetsConfig.rowIDColumn)' to the header, or set `key` to a column whose values are unique; nothing was appended",
                    code: "missing-column")
            }
            if config.columns != nil || config.rows == .file {
                throw DestinationError.blocked(
                    "\(start), which the configuration lists: add it to the header, or remove it from `columns`; nothing was appended",
                    code: "missing-column")
            }
            throw DestinationError.permanent(
                "\(start), which the file has: add it to the header, or list the columns to send with `columns`; nothing of the file was appended",
                code: "missing-column")
        }
    }
}
