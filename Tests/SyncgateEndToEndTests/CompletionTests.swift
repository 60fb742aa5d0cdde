import Foundation
import SyncgateTestSupport
import Testing

/// Bash completion (issue 29): the script `--generate-completion-script bash` prints, run by bash as
/// bash-completion would, completes `--config` with YAML files and `--destination` with the names of the
/// destinations in the config the command line would read (its `--config`, or the one found).
@Suite("Shell completion of paths and destination names (real binary, bash)")
struct CompletionTests {
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/bin/bash"), "needs bash"))
    func configPathsAndDestinationNames() async throws {
        let dir = try TemporaryDirectory("sg-completion")
        defer { dir.remove() }
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox}]
            destinations: [{name: archive, type: local, path: a}, {name: attic, type: local, path: b}]
            """)
        try dir.write("conf/other.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox}]
            destinations: [{name: vault, type: local, path: v}]
            """)
        try dir.write("conf/notes.txt", "not a config")
        let script = try await SyncgateCLI(dir: dir).run(["--generate-completion-script", "bash"])
        #expect(script.status == 0)
        try dir.write("completion.bash", script.stdout)
        // Each line: the words typed so far; bash answers with what it would offer for the last one.
        let driver = """
            source completion.bash
            PATH="$1:$PATH"
            offer() {
              COMP_WORDS=("$@"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}
              COMPREPLY=(); _syncgate syncgate "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
              printf '%s\\n' "${COMPREPLY[@]}" | sort | paste -sd, -
            }
            offer syncgate sync --destination ''
            offer syncgate status --destination at
            offer syncgate retry --config conf/other.yaml --destination ''
            offer syncgate validate --config conf/
            """
        let result = try await ProcessRunner.run(
            URL(fileURLWithPath: "/bin/bash"), ["-c", driver, "bash", SyncgateCLI.binary.deletingLastPathComponent().path],
            environment: ["SYNCGATE_CONFIG": "", "XDG_CONFIG_HOME": dir.path + "/none"], currentDirectory: dir.url)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) == [
            "archive,attic", "attic", "vault", "conf/other.yaml", "",
        ], "\(result.stdout)\n\(result.stderr)")
    }
}
