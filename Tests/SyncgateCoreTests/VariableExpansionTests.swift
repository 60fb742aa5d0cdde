import SyncgateCore
import Testing

@Suite("Config: ${VAR}, ${VAR:-default}, ${VAR:?message} expansion")
struct VariableExpansionTests {
    func expand(_ text: String, _ env: [String: String] = [:]) -> Result<String, VariableExpansion.Failure> {
        Result { () throws(VariableExpansion.Failure) -> String in try VariableExpansion.expand(text, environment: env) }
    }

    @Test func plainReferencesAndTheDollarEscape() {
        #expect(expand("${A}/x", ["A": "/data"]) == .success("/data/x"))
        #expect(expand("a${A}b${B_2}c", ["A": "1", "B_2": "2"]) == .success("a1b2c"))
        #expect(expand("cost: $$5 and $HOME") == .success("cost: $5 and $HOME"))
        #expect(expand("$${A}") == .success("${A}"))
        #expect(expand("${A}") == .failure(.init(message: "environment variable A is not set")))
        #expect(expand("${A}", ["A": ""]) == .success(""))
    }

    @Test func defaultsApplyWhenUnsetOrEmptyWithColonAndWhenUnsetWithout() {
        #expect(expand("${A:-fallback}") == .success("fallback"))
        #expect(expand("${A:-fallback}", ["A": ""]) == .success("fallback"))
        #expect(expand("${A:-fallback}", ["A": "set"]) == .success("set"))
        #expect(expand("${A-fallback}") == .success("fallback"))
        #expect(expand("${A-fallback}", ["A": ""]) == .success(""))
        #expect(expand("${A:-}") == .success(""))
        #expect(expand("${PORT:-9464}/${HOST:-127.0.0.1}") == .success("9464/127.0.0.1"))
        #expect(expand("${A:-with spaces, colons: and $$}") == .success("with spaces, colons: and $"))
    }

    @Test func aDefaultMayReferToAnotherVariableAndIsOnlyExpandedWhenUsed() {
        #expect(expand("${A:-${B}}", ["B": "b"]) == .success("b"))
        #expect(expand("${A:-${B:-c}}/x") == .success("c/x"))
        // B is unset, but the default is not used: no error.
        #expect(expand("${A:-${B}}", ["A": "a"]) == .success("a"))
        #expect(expand("${A:-${B}}") == .failure(.init(message: "environment variable B is not set")))
    }

    @Test func requiredVariablesFailWithTheirMessage() {
        #expect(expand("${TOKEN:?set TOKEN to the API token}") == .failure(.init(message: "environment variable TOKEN is not set: set TOKEN to the API token")))
        #expect(expand("${TOKEN:?set it}", ["TOKEN": ""]) == .failure(.init(message: "environment variable TOKEN is empty: set it")))
        #expect(expand("${TOKEN?set it}", ["TOKEN": ""]) == .success(""))
        #expect(expand("${TOKEN?set it}") == .failure(.init(message: "environment variable TOKEN is not set: set it")))
        #expect(expand("${TOKEN:?}") == .failure(.init(message: "environment variable TOKEN is not set")))
        #expect(expand("x${TOKEN:?set it}y", ["TOKEN": "t"]) == .success("xty"))
    }

    @Test func malformedReferencesAreErrors() {
        #expect(expand("${A") == .failure(.init(message: "unterminated ${ in '${A'")))
        #expect(expand("${A:-x") == .failure(.init(message: "unterminated ${ in '${A:-x'")))
        #expect(expand("${A:-${B}", ["A": "a"]) == .failure(.init(message: "unterminated ${ in '${A:-${B}'")))
        #expect(expand("${}") == .failure(.init(message: "'${}' is not a valid environment variable reference")))
        #expect(expand("${1A}") == .failure(.init(message: "'${1A}' is not a valid environment variable reference")))
        for (text, shown) in [("${A:+x}", "${A:+x}"), ("${not valid}", "${not valid}"), ("${A!}", "${A!}")] {
            guard case .failure(let failure) = expand(text) else {
                Issue.record("\(text) must be refused")
                continue
            }
            #expect(failure.message.hasPrefix("'\(shown)' is not a valid environment variable reference"), "\(failure.message)")
        }
    }

    @Test func namesListsEveryReferenceDefaultsIncluded() {
        #expect(VariableExpansion.names(in: "a ${A} b ${B:-${C}} $${D} ${E:?m}") == ["A", "B", "C", "E"])
        #expect(VariableExpansion.names(in: "no references") == [])
    }
}
