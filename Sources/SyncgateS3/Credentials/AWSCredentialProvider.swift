import Foundation
import SyncgateCore
import SyncgateNetwork

/// The credentials a destination signs with, from its ``AWSCredentialSource``: fixed keys as they are; fetched ones
/// (STS, a process, the container endpoint, instance metadata) asked for at the first request and again
/// ``refreshWindow`` before they expire, one fetch at a time however many uploads wait for it. Should a renewal
/// fail while the old credentials are still valid, those go on being used.
actor AWSCredentialProvider {
    let source: AWSCredentialSource
    let region: String
    /// The proxy and CAs of STS requests (the destination's).
    let network: NetworkSettings
    private var cached: AWSCredentialFetcher.Fetched?
    private var fetching: Task<AWSCredentialFetcher.Fetched, any Error>?

    /// Renewed this long before they expire (the AWS SDKs' five minutes).
    static let refreshWindow: TimeInterval = 300

    init(source: AWSCredentialSource, region: String, network: NetworkSettings = .direct) {
        self.source = source
        self.region = region
        self.network = network
    }

    func current(now: Date = Date()) async throws -> SigV4Credentials {
        if let fixed = source.fixed { return fixed }
        if let cached, !cached.needsRenewal(at: now) { return cached.credentials }
        let task: Task<AWSCredentialFetcher.Fetched, any Error>
        if let fetching {
            task = fetching
        } else {
            let source = self.source, region = self.region, network = self.network
            task = Task { try await AWSCredentialFetcher.fetch(source, region: region, network: network) }
            fetching = task
        }
        do {
            let fetched = try await task.value
            if fetching == task { fetching = nil }
            cached = fetched
            return fetched.credentials
        } catch {
            if fetching == task { fetching = nil }
            if let cached, cached.expiration.map({ $0 > now }) ?? true { return cached.credentials }
            throw error
        }
    }
}
