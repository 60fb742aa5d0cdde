import Foundation

/// Where things are when tests run: the package root, the built executables, and `../shared`.
public enum TestPaths {
    /// The package root (this file is `Tests/SyncgateTestSupport/TestPaths.swift`).
    public static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `../shared` beside the project, or `nil` in a user's clone without it.
    public static var sharedDirectory: URL? {
        if let override = ProcessInfo.processInfo.environment["SYNCGATE_SHARED_DIR"] {
            return URL(fileURLWithPath: override)
        }
        let url = packageRoot.deletingLastPathComponent().appendingPathComponent("shared")
        return FileManager.default.fileExists(atPath: url.path) ? url : nil
    }

    /// A file under `../shared/` (e.g. `testdata/sigv4`), or `nil` when `../shared` is absent.
    public static func shared(_ relative: String) -> URL? {
        sharedDirectory?.appendingPathComponent(relative)
    }

    /// The folder holding the built products (the test runner's own folder).
    public static var productsDirectory: URL {
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        var dir = exe.deletingLastPathComponent()
        // On macOS the runner sits inside an .xctest bundle.
        while dir.pathExtension == "xctest" || dir.lastPathComponent == "MacOS" || dir.lastPathComponent == "Contents" {
            dir = dir.deletingLastPathComponent()
        }
        if FileManager.default.fileExists(atPath: dir.appendingPathComponent("syncgate").path) { return dir }
        return packageRoot.appendingPathComponent(".build/debug")
    }

    /// A built executable of this package (`syncgate`, `syncgate-headunit-sim`).
    public static func executable(_ name: String) -> URL {
        productsDirectory.appendingPathComponent(name)
    }

    /// True when the CI script asks for every server-backed test to run (a missing server is then a failure,
    /// not a skip).
    public static var serversRequired: Bool {
        ProcessInfo.processInfo.environment["SYNCGATE_REQUIRE_SERVERS"] == "1"
    }
}
