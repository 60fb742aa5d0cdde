import Foundation
import SyncgateCore

/// A profile's `credential_process`, run as the AWS CLI runs it (by the shell, with syncgate's environment): its
/// standard output is `{"Version": 1, "AccessKeyId", "SecretAccessKey", "SessionToken", "Expiration"}`. It must end
/// within ``timeout``; a failure blocks the destination with the process's own message (its standard error,
/// redacted), never its output.
enum AWSCredentialProcess {
    static let timeout: TimeInterval = 60

    static func run(_ command: String, profile: String) async throws -> AWSCredentialFetcher.Fetched {
        let context = "profile \(profile): credential_process"
        let (status, output, errors) = try await Task.detached { () throws -> (Int32, Data, Data) in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", command]
            let out = Pipe(), err = Pipe()
            process.standardOutput = out
            process.standardError = err
            process.standardInput = FileHandle.nullDevice
            do {
                try process.run()
            } catch {
                throw DestinationError.blocked("\(context) cannot start: \(error.localizedDescription)", code: "CredentialProcess")
            }
            let deadline = DispatchTime.now() + timeout
            let killer = DispatchWorkItem { if process.isRunning { process.terminate() } }
            DispatchQueue.global().asyncAfter(deadline: deadline, execute: killer)
            // Read both pipes fully (a large stderr must not block the process).
            let group = DispatchGroup()
            let errBox = ErrorOutput()
            group.enter()
            DispatchQueue.global().async {
                errBox.data = err.fileHandleForReading.readDataToEndOfFile()
                group.leave()
            }
            let outData = out.fileHandleForReading.readDataToEndOfFile()
            group.wait()
            let errData = errBox.data
            process.waitUntilExit()
            killer.cancel()
            return (process.terminationStatus, outData, errData)
        }.value
        guard status == 0 else {
            let message = Redactor.shared.redact(String(decoding: errors.prefix(500), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
            throw DestinationError.blocked("\(context) exited with status \(status)" + (message.isEmpty ? "" : ": \(message)"), code: "CredentialProcess")
        }
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

/// The process's standard error, read on another thread than its output (written before the group is left,
/// read after it is waited for).
private final class ErrorOutput: @unchecked Sendable {
    var data = Data()
}
