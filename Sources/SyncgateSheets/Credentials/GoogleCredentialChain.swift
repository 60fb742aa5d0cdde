import Foundation

/// Finds a Sheets API destination's credentials in the order of Google's client libraries (Application Default
/// Credentials): the destination's `credentials_file`; the file `GOOGLE_APPLICATION_CREDENTIALS` names; gcloud's
/// application-default file (`$CLOUDSDK_CONFIG/application_default_credentials.json`, else
/// `~/.config/gcloud/application_default_credentials.json`), when it exists; the GCE metadata server
/// (`GCE_METADATA_HOST`, else `GCE_METADATA_ROOT`, else 169.254.169.254), unless `NO_GCE_CHECK=true`.
///
/// Only the environment and the file system's names are read here (no file is opened, nothing is asked over the
/// network): a file the first two links name is used even when it cannot be read (the error then names it, as
/// Google's libraries do), and whether the metadata server answers shows at the first token.
enum GoogleCredentialChain {
    /// No credentials anywhere: the config key it belongs to, and what was looked at.
    struct Failure: Error, CustomStringConvertible {
        var key: String
        var description: String
    }

    /// The well-known file's name in gcloud's config folder.
    static let gcloudFileName = "application_default_credentials.json"
    /// The metadata server's address when `GCE_METADATA_HOST` does not name another (what Google's Go library
    /// uses; an address needs no DNS lookup, so a machine off Google Cloud fails at connect).
    static let defaultMetadataHost = "169.254.169.254"

    static func resolve(credentialsFile: String?, environment: [String: String]) throws -> GoogleCredentialSource {
        func env(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        let home = env("HOME") ?? passwordHome()
        if let credentialsFile, !credentialsFile.isEmpty { return .file(path: credentialsFile, origin: .config) }
        if let named = env("GOOGLE_APPLICATION_CREDENTIALS") {
            return .file(path: expand(named, home: home), origin: .environment)
        }
        var lookedAt = ["credentials_file is not set", "GOOGLE_APPLICATION_CREDENTIALS is not set"]
        if let wellKnown = gcloudFile(environment: environment, home: home) {
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: wellKnown, isDirectory: &isFolder), !isFolder.boolValue {
                return .file(path: wellKnown, origin: .gcloud)
            }
            lookedAt.append("\(wellKnown) does not exist")
        } else {
            lookedAt.append("no gcloud config folder (neither CLOUDSDK_CONFIG nor HOME is set)")
        }
        if metadataServerDisabled(environment) {
            throw Failure(
                key: "credentials_file",
                description: "no Google credentials: " + lookedAt.joined(separator: "; ")
                    + "; the GCE metadata server is not asked (NO_GCE_CHECK=true). Set credentials_file to a service-account key, "
                    + "or GOOGLE_APPLICATION_CREDENTIALS, or run `gcloud auth application-default login --scopes="
                    + "https://www.googleapis.com/auth/spreadsheets,https://www.googleapis.com/auth/cloud-platform`")
        }
        return .metadataServer(baseURL: metadataBaseURL(environment), lookedAt: lookedAt)
    }

    /// gcloud's application-default file: in `CLOUDSDK_CONFIG`, else in `~/.config/gcloud`.
    static func gcloudFile(environment: [String: String], home: String?) -> String? {
        if let folder = environment["CLOUDSDK_CONFIG"], !folder.isEmpty {
            return (expand(folder, home: home) as NSString).appendingPathComponent(gcloudFileName)
        }
        guard let home else { return nil }
        return (home as NSString).appendingPathComponent(".config/gcloud/" + gcloudFileName)
    }

    /// `NO_GCE_CHECK=true` (any case, or `1`): the metadata server is never asked, as with google-auth.
    static func metadataServerDisabled(_ environment: [String: String]) -> Bool {
        guard let value = environment["NO_GCE_CHECK"]?.trimmingCharacters(in: .whitespaces).lowercased() else { return false }
        return value == "true" || value == "1" || value == "yes"
    }

    /// `http://` and the metadata server's host (`GCE_METADATA_HOST`, else its older name `GCE_METADATA_ROOT`, as
    /// `host` or `host:port`; a scheme written in front is kept).
    static func metadataBaseURL(_ environment: [String: String]) -> String {
        let host = ["GCE_METADATA_HOST", "GCE_METADATA_ROOT"].lazy
            .compactMap { environment[$0]?.trimmingCharacters(in: .whitespaces) }.first { !$0.isEmpty } ?? defaultMetadataHost
        var base = host.contains("://") ? host : "http://" + host
        while base.hasSuffix("/") { base.removeLast() }
        return base
    }

    static func expand(_ path: String, home: String?) -> String {
        guard path == "~" || path.hasPrefix("~/"), let home else { return path }
        return home + path.dropFirst()
    }

    /// The home folder of the user syncgate runs as, from the password database (`HOME` unset, as for a system
    /// service without `User=`).
    static func passwordHome() -> String? {
        guard let entry = getpwuid(geteuid()), let dir = entry.pointee.pw_dir else { return nil }
        let home = String(cString: dir)
        return home.isEmpty ? nil : home
    }
}
