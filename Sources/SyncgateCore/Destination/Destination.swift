import Foundation

/// What a destination plugin implements: move one file, delete by remote name, list remote names,
/// and say of its own errors whether they are worth retrying and whether they are about the file or the whole
/// destination.
///
/// A plugin never retries, sleeps, keeps status or aggregates progress: the ``DeliveryLayer`` that
/// wraps every destination does that, the same way for all of them.
public protocol Destination: Sendable {
    /// Uploads one file, streamed from ``UploadItem/absolutePath``. `progress` is called with the number of
    /// bytes of this file delivered so far (cumulative, restarting from 0 on a new attempt).
    func upload(_ item: UploadItem, progress: @escaping @Sendable (Int64) -> Void) async throws -> Receipt

    /// Deletes one remote object by its remote name.
    func delete(remoteName: String) async throws

    /// Lists what the destination holds.
    func list() async throws -> RemoteListing

    /// Lists what the destination holds for `syncgate check`: as ``list()``, with what the comparison with the ledger
    /// can use cheaply (a checksum from the listing itself, a modification time). Never reads a copy. Default: ``list()``.
    func verificationListing() async throws -> RemoteListing

    /// ``verificationListing()`` a page at a time, each handed to `page` as it comes: in the byte order of the
    /// names when ``verificationListingIsOrdered``, so that `syncgate check` merges it with the ledger page by page and
    /// holds neither whole. `beforeRequest` is awaited before each request the listing makes (the destination's
    /// `rate`). Returns whether the listing is complete. Default: ``verificationListing()``, as one page.
    func verificationListing(beforeRequest: () async throws -> Void,
                             page: ([RemoteListing.Entry]) async throws -> Void) async throws -> Bool

    /// `true` when ``verificationListing(beforeRequest:page:)`` gives names in byte order (S3's ListObjectsV2, a
    /// local folder's walk). The check verifies the order as it goes, and compares in memory instead when it is
    /// broken. Default `false`.
    var verificationListingIsOrdered: Bool { get }

    /// The SHA-256 of the copy stored under `remoteName`, read whole (`syncgate check --checksum`), or nil when this
    /// destination cannot read its copies back. Default: nil.
    func copySHA256(remoteName: String) async throws -> String?

    /// Classifies an error thrown by this destination: its class and its scope. The default understands
    /// ``DestinationError``, timeouts and connection errors (see ``Classification/of(_:)``).
    func classify(_ error: any Error) -> Classification

    // MARK: Optional abilities (defaults below)

    /// Maps a relative path to the name the destination stores it under. Throw ``DestinationError`` with
    /// class `.permanent` for a path this destination cannot hold. Must be deterministic.
    func remoteName(forRelativePath path: String) throws -> String

    /// `true` when ``remoteName(forRelativePath:)`` never gives two different paths the same name (it keeps the
    /// path, perhaps behind a fixed prefix). Names can then clash only between sources, and the engine does not
    /// track the names of a destination that one source feeds. Default `false`.
    var remoteNamesAreDistinct: Bool { get }

    /// `true` when ``list()`` is cheap and is the truth about what is there (a head unit forgets files):
    /// the engine lists at the start of every run and sends again files the ledger marks synced but the
    /// destination no longer has.
    var listingIsAuthoritative: Bool { get }

    /// `true` when sending a file again can do no harm, because the copy is replaced whole (a local file, an S3
    /// object, a head-unit file). The engine then writes the mark "attempt started" together with other ledger
    /// changes, in batches, instead of making each one durable before its upload: after a crash, a file whose
    /// mark was lost is simply sent again. `false` (the default) for destinations that append (a spreadsheet),
    /// where only a durable mark makes the next run check what arrived before sending again.
    var resendIsHarmless: Bool { get }

    /// `true` when only one instance of a fleet may work on the destination at a time (a head unit accepts one
    /// session per app; a spreadsheet's duplicate check reads, then appends). On a shared PostgreSQL ledger one
    /// instance leads it (``DestinationLeadership``) and the others leave it out of their passes.
    var needsOneWriter: Bool { get }

    /// `true` when ``upload(_:progress:)`` computes the SHA-256 of the bytes it sends and returns it in
    /// ``Receipt/sha256`` whenever ``UploadItem/sha256`` is empty. The engine then does not read new files once
    /// more just to hash them before sending. Default `false`: items always come with their hash.
    var hashesWhileSending: Bool { get }

    /// `true` when ``upload(_:progress:)`` itself checks, with ``UploadItem/verifyUnchanged()``, that the file did
    /// not change while it was sent, before it makes the copy visible (a rename): what it publishes is then the
    /// planned version, and the delivery layer does not `stat` the file once more after the upload. Default `false`.
    var verifiesUnchangedBeforePublishing: Bool { get }

    /// The order files are sent in when the destination's config sets no `order:` (``DeliveryOrder``). Default:
    /// the walk's order.
    var preferredOrder: DeliveryOrder { get }

    /// Called before the ledger records deliveries as synced, with the files delivered since the last call: a
    /// destination that makes its copies durable in groups (the local folder's `fsync: batch`) flushes them
    /// here, so that a row is never `synced` before its copy would survive a power cut. Throwing fails the run
    /// (the rows stay unsynced and the files are sent again). Default: nothing to do.
    func makeDurable() throws

    /// Called once before a batch with every item the run will upload. Returns the items that must fail
    /// alone without being sent (keyed by ``UploadItem/remoteName``), e.g. files that cannot fit.
    func prepare(_ items: [UploadItem]) async throws -> [String: DestinationError]

    /// Asks the destination whether it already holds exactly these bytes (e.g. S3 HEAD + ETag).
    /// Returns the receipt when it does; the file is then recorded synced without an upload.
    func existingCopy(of item: UploadItem) async throws -> Receipt?

    /// Called once after the batch, whatever happened (close connections, unregister). A gateway calls it only
    /// when it stops or reloads: its destinations serve many passes.
    func finish() async

    /// `true` when a file the ledger has never seen may already be at the destination and should be looked for there
    /// before it is sent (S3's `existing: check`, for a runner that starts with an empty ledger): such files go to
    /// ``existingCopy(of:)`` first, as files whose last outcome is unknown do. Default: `false`.
    var checksNewFiles: Bool { get }

    /// Hands the destination its ``ResumeStore`` in the ledger, before its first upload of each run or pass (the same
    /// store each time): a plugin whose uploads can be resumed (S3 multipart) keeps their progress there, so that the
    /// next run sends only what is missing. Default: nothing kept.
    func useResumeStore(_ store: ResumeStore)

    /// Called at the start of each pass of a gateway (whose destinations stay open across passes): forget what is
    /// only good for one pass (a cache of what the destination holds). Default: nothing.
    func startPass() async

    /// Called before the uploads of each run or pass of a destination that ``needsOneWriter``, on a shared ledger,
    /// with the epoch of this instance's lead (a number that grows with every grant of the lead, see
    /// ``Ledger/leadEpoch(_:)``). An epoch other than the last one seen means that other instances may have written
    /// to the destination since this one last did: forget what is known of its contents (Sheets: the key column),
    /// so that rows another leader had in flight are looked for before they are sent again. Default: nothing.
    func writesUnderLead(epoch: Int64) async

    /// Hands the destination, before each run's uploads, the check to make right before each request that writes to
    /// it: an error (the instance's fence lapsed: it can no longer confirm its hold on the shared ledger, see
    /// ``Ledger/fenceRefusal(destination:needsOneWriter:token:)``) means the request must not go out; throw it. The
    /// delivery layer asks the same before each attempt, but an attempt that waited (a rate limit, a token, a frozen
    /// process woken) may reach its write long after. Default: ignored.
    func useWriteFence(_ refusal: @escaping @Sendable () -> (any Error)?)

    /// `true` when ``delete(remoteNames:)`` deletes many names in few requests (S3's DeleteObjects).
    var supportsBatchDelete: Bool { get }

    /// Deletes many names; returns each name's own error (names not in the map were deleted). Throws when the
    /// whole request failed. Only called when ``supportsBatchDelete`` is `true`.
    func delete(remoteNames: [String]) async throws -> [String: DestinationError]

    /// Checks, cheaply, that the destination can be used now (a head unit: TCP connect and session start; S3: one
    /// bucket request; Sheets: a token and a metadata read). Called at the start of a run for a destination that
    /// was unavailable or blocked; throws what an upload would (a destination-scoped error means it is still
    /// away). Default: nothing to check, the first upload tells.
    func probe() async throws

    /// A digest of what the plugin uses that its config text does not show (credentials from the environment or a
    /// key file's content), so that a destination blocked for its credentials is tried again once they change.
    /// The core adds the destination's config text itself. Default: "".
    var settingsFingerprint: String { get }

    /// A number that changes whenever the destination opens a new connection or session (0 for destinations
    /// without one). As the SDL libraries do, a file's failure count starts afresh on a new connection; the
    /// delivery layer still bounds a run's attempts per file (see ``DeliveryLayer``) and the ledger keeps the total.
    var connectionGeneration: Int { get async }
}

extension Destination {
    public func classify(_ error: any Error) -> Classification { Classification.of(error) }
    public func probe() async throws {}
    public func verificationListing() async throws -> RemoteListing { try await list() }
    public func verificationListing(beforeRequest: () async throws -> Void,
                                    page: ([RemoteListing.Entry]) async throws -> Void) async throws -> Bool {
        try await beforeRequest()
        let listing = try await verificationListing()
        try await page(listing.entries)
        return listing.isComplete
    }
    public var verificationListingIsOrdered: Bool { false }
    public func copySHA256(remoteName: String) async throws -> String? { nil }
    public var settingsFingerprint: String { "" }
    public func remoteName(forRelativePath path: String) throws -> String { path }
    public var remoteNamesAreDistinct: Bool { false }
    public var listingIsAuthoritative: Bool { false }
    public var resendIsHarmless: Bool { false }
    public var needsOneWriter: Bool { false }
    public var hashesWhileSending: Bool { false }
    public var verifiesUnchangedBeforePublishing: Bool { false }
    public var preferredOrder: DeliveryOrder { .walk }
    public func makeDurable() throws {}
    public func prepare(_ items: [UploadItem]) async throws -> [String: DestinationError] { [:] }
    public func existingCopy(of item: UploadItem) async throws -> Receipt? { nil }
    public func finish() async {}
    public func startPass() async {}
    public func writesUnderLead(epoch: Int64) async {}
    public func useWriteFence(_ refusal: @escaping @Sendable () -> (any Error)?) {}
    public func useResumeStore(_ store: ResumeStore) {}
    public var checksNewFiles: Bool { false }
    public var connectionGeneration: Int { get async { 0 } }
    public var supportsBatchDelete: Bool { false }
    public func delete(remoteNames: [String]) async throws -> [String: DestinationError] {
        var failures: [String: DestinationError] = [:]
        for name in remoteNames {
            do {
                try await delete(remoteName: name)
            } catch {
                failures[name] = error as? DestinationError ?? DestinationError(classify(error), DeliveryLayer.describe(error))
            }
        }
        return failures
    }
}
