/// The languages of the SDL RPC spec's `Language` enum (MOBILE_API.xml), as RegisterAppInterface names them in
/// `languageDesired` and `hmiDisplayLanguageDesired`.
enum SDLLanguage {
    static let all: [String] = [
        "EN-US", "ES-MX", "FR-CA", "DE-DE", "ES-ES", "EN-GB", "RU-RU", "TR-TR", "PL-PL", "FR-FR", "IT-IT", "SV-SE",
        "PT-PT", "NL-NL", "EN-AU", "ZH-CN", "ZH-TW", "JA-JP", "AR-SA", "KO-KR", "PT-BR", "CS-CZ", "DA-DK", "NO-NO",
        "NL-BE", "EL-GR", "HU-HU", "FI-FI", "SK-SK", "EN-IN", "TH-TH", "EN-SA", "HE-IL", "RO-RO", "UK-UA", "ID-ID",
        "VI-VN", "MS-MY", "HI-IN",
    ]

    /// The spec's spelling of `text` (`de-de`, `DE_DE` and `DE-DE` are all `DE-DE`), or nil when the spec has no such
    /// language.
    static func named(_ text: String) -> String? {
        let spelled = text.uppercased().replacingOccurrences(of: "_", with: "-")
        return all.contains(spelled) ? spelled : nil
    }
}
