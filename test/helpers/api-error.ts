import { ApiError } from "@google/genai";

/** The SDK's ApiError a call ended with; anything else (or success) fails the test. */
export async function apiErrorOf(promise: Promise<unknown>): Promise<ApiError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  if (!(error instanceof ApiError)) {
    const cause =
      error instanceof Error && error.cause !== undefined ? ` (${String(error.cause)})` : "";
    throw new Error(`expected an ApiError, got ${String(error)}${cause}`);
  }
  return error;
}
