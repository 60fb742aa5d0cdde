@testable import SyncgateCore
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

    /// `{a,b}` alternatives, as rclone's filters and the shells read them (a user writes `*.{jpg,png}` expecting it).
    @Test func bracesGiveAlternatives() throws {
        let pictures = try Glob("*.{jpg,png}")
        #expect(pictures.matches("b.jpg"))
        #expect(pictures.matches("deep/down/d.png"))
        #expect(!pictures.matches("e.txt"))
        #expect(!pictures.matches("x.{jpg,png}"))
        // Groups across folders, several groups, nested groups, an empty alternative.
        let folders = try Glob("/{reports/**,logs}/*.{csv,json}")
        #expect(folders.matches("reports/2026/a.csv"))
        #expect(folders.matches("logs/b.json"))
        #expect(!folders.matches("other/logs/b.json"))
        #expect(!folders.matches("logs/b.txt"))
        let nested = try Glob("a{b,c{d,e}}f")
        #expect(nested.matches("abf") && nested.matches("acdf") && nested.matches("acef"))
        #expect(!nested.matches("acf"))
        let optional = try Glob("report{,-final}.pdf")
        #expect(optional.matches("report.pdf") && optional.matches("report-final.pdf"))
        #expect(try Glob.expandingBraces("x{a,b}{1,2}", raw: "") == ["xa1", "xa2", "xb1", "xb2"])
    }

    /// A brace with no comma in its group, escaped, inside `[...]` or never closed is a literal character.
    @Test func bracesWithoutAlternativesAreLiteral() throws {
        #expect(try Glob("{draft}.txt").matches("{draft}.txt"))
        #expect(!(try Glob("{draft}.txt").matches("draft.txt")))
        #expect(try Glob("\\{a,b}.txt").matches("{a,b}.txt"))
        #expect(!(try Glob("\\{a,b}.txt").matches("a.txt")))
        #expect(try Glob("[{]x.txt").matches("{x.txt"))
        #expect(try Glob("open{a,b").matches("open{a,b"))
        #expect(try Glob.expandingBraces("{a,b}{c", raw: "") == ["a{c", "b{c"])
        // Negation covers every alternative, and the last match still decides.
        let s = try set(["**/*", "!*.{tmp,bak}"])
        #expect(s.matches("a.txt"))
        #expect(!s.matches("x/a.tmp") && !s.matches("a.bak"))
    }

    /// Groups that would make too many patterns, or an alternative that is empty as a whole pattern, are errors.
    @Test func braceExpansionIsBounded() throws {
        #expect(throws: Glob.SyntaxError.self) { try Glob("{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}") }
        #expect((try? Glob("{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}")) != nil)
        #expect(throws: Glob.SyntaxError.self) { try Glob("{,/}") }
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
