/**
 * Telegram's limits on what a bot uploads (sendPhoto, sendDocument). Here rather than with the
 * Telegram code, so that the tools that make files (send_file) keep to them without knowing the
 * transport.
 */
export const TELEGRAM_PHOTO_MAX_BYTES = 10 * 1024 * 1024;
export const TELEGRAM_UPLOAD_MAX_BYTES = 50 * 1024 * 1024;
export const TELEGRAM_CAPTION_MAX_CHARS = 1024;
