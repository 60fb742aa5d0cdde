import Foundation
import SyncgateCore
import SyncgateHeadUnit
import SyncgateSDL
import Testing

@Suite("relative paths to head-unit names")
struct RemoteNameMapperTests {
    @Test("separators become _, the result is stable")
    func simple() throws {
        #expect(try RemoteNameMapper.remoteName(for: "cover.png") == "cover.png")
        #expect(try RemoteNameMapper.remoteName(for: "art/2024/cover.png") == "art_2024_cover.png")
        #expect(try RemoteNameMapper.remoteName(for: "a//b.png") == "a_b.png")
        #expect(try RemoteNameMapper.remoteName(for: "x/y z.wav") == RemoteNameMapper.remoteName(for: "x/y z.wav"))
        #expect(try RemoteNameMapper.remoteName(for: "odd\\name\u{1}.bin") == "odd_name_.bin")
    }

    @Test("long paths: at most 255 bytes, extension kept, distinct paths distinct names, deterministic")
    func long() throws {
        let base = String(repeating: "folder/", count: 40)
        let a = try RemoteNameMapper.remoteName(for: base + "one.png")
        let b = try RemoteNameMapper.remoteName(for: base + "two.png")
        let multibyte = try RemoteNameMapper.remoteName(for: String(repeating: "é", count: 300) + ".mp3")
        for name in [a, b, multibyte] {
            #expect(name.utf8.count <= 255)
            #expect(!name.contains("/"))
        }
        #expect(a.hasSuffix(".png") && b.hasSuffix(".png") && multibyte.hasSuffix(".mp3"))
        #expect(a != b)
        #expect(try RemoteNameMapper.remoteName(for: base + "one.png") == a)
        #expect(a.contains("~"))
    }

    @Test(". and .. and empty paths are refused as permanent")
    func refused() {
        for path in ["..", ".", "", "/"] {
            #expect(throws: DestinationError.self) { try RemoteNameMapper.remoteName(for: path) }
        }
    }

    @Test("fileType from the extension")
    func fileTypes() {
        #expect(SDLFileType.forName("a.PNG") == "GRAPHIC_PNG")
        #expect(SDLFileType.forName("a.jpeg") == "GRAPHIC_JPEG")
        #expect(SDLFileType.forName("a.bmp") == "GRAPHIC_BMP")
        #expect(SDLFileType.forName("a.wav") == "AUDIO_WAVE")
        #expect(SDLFileType.forName("a.mp3") == "AUDIO_MP3")
        #expect(SDLFileType.forName("a.aac") == "AUDIO_AAC")
        #expect(SDLFileType.forName("a.json") == "JSON")
        #expect(SDLFileType.forName("a.tar.gz") == "BINARY")
        #expect(SDLFileType.forName("README") == "BINARY")
    }
}
