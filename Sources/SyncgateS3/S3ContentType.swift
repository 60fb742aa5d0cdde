/// The media types stored with objects by their file's extension, for the kinds of files syncgate users deliver
/// (artwork, audio, video, records, logs, reports), as the aws CLI and browsers name them. Anything else is
/// ``fallback``; `content_types:` adds or overrides extensions (``S3ObjectSettings``).
public enum S3ContentType {
    public static let fallback = "application/octet-stream"

    public static let builtIn: [String: String] = [
        // images
        "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp",
        "svg": "image/svg+xml", "bmp": "image/bmp", "ico": "image/vnd.microsoft.icon", "tif": "image/tiff",
        "tiff": "image/tiff", "avif": "image/avif", "heic": "image/heic",
        // audio
        "mp3": "audio/mpeg", "m4a": "audio/mp4", "aac": "audio/aac", "wav": "audio/wav", "ogg": "audio/ogg",
        "oga": "audio/ogg", "opus": "audio/opus", "flac": "audio/flac",
        // video
        "mp4": "video/mp4", "m4v": "video/mp4", "mov": "video/quicktime", "webm": "video/webm", "mkv": "video/x-matroska",
        "avi": "video/x-msvideo",
        // text and records
        "txt": "text/plain; charset=utf-8", "log": "text/plain; charset=utf-8", "md": "text/markdown; charset=utf-8",
        "csv": "text/csv; charset=utf-8", "tsv": "text/tab-separated-values; charset=utf-8",
        "json": "application/json", "ndjson": "application/x-ndjson", "jsonl": "application/x-ndjson",
        "xml": "application/xml", "yaml": "application/yaml", "yml": "application/yaml",
        "html": "text/html; charset=utf-8", "htm": "text/html; charset=utf-8", "css": "text/css; charset=utf-8",
        "js": "text/javascript; charset=utf-8",
        // documents and archives
        "pdf": "application/pdf", "zip": "application/zip", "gz": "application/gzip", "tgz": "application/gzip",
        "tar": "application/x-tar", "bz2": "application/x-bzip2", "xz": "application/x-xz", "zst": "application/zstd",
        "7z": "application/x-7z-compressed", "wasm": "application/wasm",
    ]
}
