import Foundation
import SyncgateCore

/// A profile's `credential_process`, run as the AWS CLI runs it (by the shell, with syncgate's environment): its
/// standard output is `{"Version": 1, "AccessKeyId", "SecretAccessKey", "SessionToken", "Expiration"}`. It must end
/// within ``timeout`` and write at most ``outputLimit`` bytes (``BoundedProcess``: past either its process group is
/// killed); a failure blocks the destination with the process's own message (its standard error, redacted), never
/// its output.
enum AWSCredentialProcess {
    static let timeout: TimeInterval = 60
    /// The most standard output read: a credentials JSON is well under 4 KiB.
    static let outputLimit = 1 << 20

    static func run(_ command: String, profile: String, timeout: TimeInterval = timeout, grace: TimeInterval = 2) async throws -> AWSCredentialFetcher.Fetched {
        do {
            return try await runBounded(command, profile: profile, timeout: timeout, grace: grace).fetched
        } catch let failure as ProcessFailure {
            throw failure.error
        }
    }

    /// ``run(_:profile:timeout:grace:)``, with the process id of the shell (for tests that check it is gone).
    static func runBounded(_ command: String, profile: String, timeout: TimeInterval = timeout, grace: TimeInterval = 2) async throws
        -> (fetched: AWSCredentialFetcher.Fetched, pid: pid_t) {
        let context = "profile \(profile): credential_process"
        let outcome: BoundedProcess.Outcome
        do {
            outcome = try await BoundedProcess(command: command, timeout: timeout, outputLimit: outputLimit, grace: grace).run()
        } catch {
            throw DestinationError.blocked("\(context) cannot start: \(error.localizedDescription)", code: "CredentialProcess")
        }
        let fetched: AWSCredentialFetcher.Fetched
        do {
            fetched = try answer(outcome, context: context, timeout: timeout)
        } catch let error as DestinationError {
            throw ProcessFailure(error: error, pid: outcome.pid)
        }
        return (fetched, outcome.pid)
    }

    /// A failure of the process, with its id (``runBounded``): ``run`` throws the ``DestinationError`` alone.
    struct ProcessFailure: Error {
        var error: DestinationError
        var pid: pid_t
    }

    static func answer(_ outcome: BoundedProcess.Outcome, context: String, timeout: TimeInterval) throws -> AWSCredentialFetcher.Fetched {
        switch outcome.ending {
        case .timedOut:
            throw DestinationError.blocked("\(context) did not end within \(Int(timeout)) s; killed it", code: "CredentialProcess")
        case .outputTooLarge:
            throw DestinationError.blocked("\(context) wrote more than \(outputLimit >> 20) MiB; killed it", code: "CredentialProcess")
        case .exited(let status) where status != 0:
            let message = Redactor.shared.snippet(String(decoding: outcome.errors.prefix(2000), as: UTF8.self), limit: 500)
            throw DestinationError.blocked("\(context) exited with status \(status)" + (message.isEmpty ? "" : ": \(message)"), code: "CredentialProcess")
        case .exited:
            break
        }
        let output = Data(outcome.output)
        if let object = try? JSONSerialization.jsonObject(with: output) as? [String: Any], let version = object["Version"] as? Int, version != 1 {
            throw DestinationError.blocked("\(context): answer Version \(version), expected 1", code: "CredentialProcess")
        }
        do {
            return try AWSCredentialFetcher.credentials(fromJSON: output, context: context)
        } catch {
            throw DestinationError.blocked("\(context): its output is not the credentials JSON (Version 1, AccessKeyId, SecretAccessKey)", code: "CredentialProcess")
        }
    }
}
