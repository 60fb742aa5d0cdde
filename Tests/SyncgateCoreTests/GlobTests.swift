import SyncgateCore
import Testing

@Suite("gitignore-style globs")
struct GlobTests {
    func set(_ patterns: [String]) throws -> GlobSet { try GlobSet(patterns: patterns) }

    @Test func doubleStarSpansFolders() throws {
        let g = try Glob("**/*.png")
        #expect(g.matches("a.png"))
        #expect(g.matches("x/y/z/a.png"))
        #expect(!g.matches("x/y/a.jpg"))
        let middle = try Glob("reports/**/build-*.txt")
        #expect(middle.matches("reports/build-1.txt"))
        #expect(middle.matches("reports/2026/11/build-1.txt"))
        #expect(!middle.matches("other/2026/build-1.txt"))
    }

    @Test func patternWithoutSlashMatchesAtAnyDepthAndAnchoredDoesNot() throws {
        #expect(try Glob("*.csv").matches("records/deep/x.csv"))
        #expect(try Glob("/top.txt").matches("top.txt"))
        #expect(!(try Glob("/top.txt").matches("sub/top.txt")))
    }

    @Test func folderMatchCoversEverythingBelow() throws {
        let hidden = try Glob("**/.*")
        #expect(hidden.matches(".git/config"))
        #expect(hidden.matches("a/.cache/b/c.bin"))
        #expect(hidden.matches("a/.hidden"))
        #expect(!hidden.matches("a/visible.txt"))
        #expect(try Glob("logs/").matches("logs/2026/x.log"))
    }

    @Test func lastMatchWinsAndNegationReincludes() throws {
        let s = try set(["**/*.log", "!**/keep.log"])
        #expect(s.decision(for: "a/b.log") == true)
        #expect(s.decision(for: "a/keep.log") == false)
        #expect(s.decision(for: "a/b.txt") == nil)
        let again = try set(["!**/keep.log", "**/*.log"])
        #expect(again.decision(for: "a/keep.log") == true)
    }

    @Test func sourceIncludeExclude() throws {
        let source = SourceConfig(name: "s", path: "/s", include: try set(["**/*"]), exclude: try set(["**/.*", "**/*.tmp", "!**/important.tmp"]))
        #expect(source.selects("a/b.txt"))
        #expect(!source.selects("a/.b"))
        #expect(!source.selects("a/x.tmp"))
        #expect(source.selects("a/important.tmp"))
    }

    @Test func classesAndWildcards() throws {
        #expect(try Glob("img-[0-9].png").matches("img-7.png"))
        #expect(!(try Glob("img-[!0-9].png").matches("img-7.png")))
        #expect(try Glob("a?c").matches("abc"))
        #expect(!(try Glob("a*c").matches("a/c")))
    }

    /// `**/X` is decided on the path's bytes, segment by segment (literal, `*suffix`, `prefix*`, else fnmatch):
    /// each shape, at any depth, and for a folder above the file.
    @Test func oneSegmentPatternsAtAnyDepth() throws {
        let literal = try Glob("**/README")
        #expect(literal.matches("README") && literal.matches("a/b/README") && literal.matches("README/x.txt"))
        #expect(!literal.matches("a/README.md") && !literal.matches("a/xREADME"))
        let prefix = try Glob("draft*")
        #expect(prefix.matches("draft") && prefix.matches("x/draft-2.txt") && prefix.matches("drafts/x.txt"))
        #expect(!prefix.matches("x/a-draft.txt"))
        let suffix = try Glob("**/*.png")
        #expect(suffix.matches(".png") && suffix.matches("x//y.png"))  // "*" matches a leading dot, as fnmatch does
        #expect(!suffix.matches("a.PNG") && !suffix.matches("png") && !suffix.matches("a.png.txt"))
        #expect(try Glob("**/café*").matches("x/café au lait.txt"))
        #expect(!(try Glob("**/café*").matches("x/cafe\u{301}.txt")))  // bytes, not canonical equivalence
        let escaped = try Glob("**/\\*.txt")  // a literal star
        #expect(escaped.matches("a/*.txt") && !escaped.matches("a/b.txt"))
        #expect(try Glob("*").matches("a/b") && !(try Glob("*").matches("")))
        #expect(try Glob("**/a?c.[0-9]").matches("x/abc.7") && !(try Glob("**/a?c.[0-9]").matches("x/abc.x")))
    }

    @Test func invalidPatternsAreRejected() {
        #expect(throws: Glob.SyntaxError.self) { try Glob("") }
        #expect(throws: Glob.SyntaxError.self) { try Glob("[abc") }
        #expect(throws: Glob.SyntaxError.self) { try Glob("a**b") }
        #expect(throws: Glob.SyntaxError.self) { try Glob("!") }
    }
}
