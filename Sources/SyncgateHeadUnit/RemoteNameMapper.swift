import Foundation
import SyncgateCore
import SyncgateSDL

/// Maps a source-relative path to the name a head unit stores it under: path separators become `_`, the
/// result has no `/`, is at most 255 UTF-8 bytes and is the same for the same path every time. A name that
/// would be longer keeps its extension and gets `~` plus the 8 hex digits of the path's CRC-32 instead of its tail.
public enum RemoteNameMapper {
    public static let maxLength = 255

    public static func remoteName(for relativePath: String) throws -> String {
        let components = relativePath.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard !components.isEmpty else {
            throw DestinationError.permanent("the path \"\(relativePath)\" has no file name", code: "INVALID_NAME")
        }
        var name = components.joined(separator: "_")
        name = String(name.unicodeScalars.map { $0.value < 0x20 || $0 == "\\" ? "_" : Character($0) })
        guard name != ".", name != ".." else {
            throw DestinationError.permanent("\"\(relativePath)\" cannot be stored on a head unit", code: "INVALID_NAME")
        }
        if name.utf8.count <= maxLength { return name }
        let digest = String(format: "%08x", CRC32.checksum(Array(relativePath.utf8)))
        let tag = "~" + digest
        var ext = ""
        if let dot = name.lastIndex(of: "."), name.distance(from: dot, to: name.endIndex) <= 16 {
            ext = String(name[dot...])
        }
        let stem = ext.isEmpty ? name : String(name[..<name.lastIndex(of: ".")!])
        let budget = maxLength - tag.utf8.count - ext.utf8.count
        var prefix = ""
        for character in stem {
            if prefix.utf8.count + String(character).utf8.count > budget { break }
            prefix.append(character)
        }
        return prefix + tag + ext
    }
}
