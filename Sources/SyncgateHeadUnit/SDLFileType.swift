/// The PutFile `fileType` for a file name, from its extension.
public enum SDLFileType {
    public static func forName(_ name: String) -> String {
        let ext = name.split(separator: ".").count > 1 ? String(name.split(separator: ".").last!).lowercased() : ""
        switch ext {
        case "png": return "GRAPHIC_PNG"
        case "jpg", "jpeg": return "GRAPHIC_JPEG"
        case "bmp": return "GRAPHIC_BMP"
        case "wav", "wave": return "AUDIO_WAVE"
        case "mp3": return "AUDIO_MP3"
        case "aac", "m4a": return "AUDIO_AAC"
        case "json": return "JSON"
        default: return "BINARY"
        }
    }
}
