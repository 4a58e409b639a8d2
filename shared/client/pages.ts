/** The items of a paged list, one page read at a time as the caller iterates (a `for await` may stop early). */
export async function* eachItemOfPages<T>(
  readPage: (cursor: string | undefined) => Promise<{ items: T[]; nextCursor?: string | undefined }>,
): AsyncGenerator<T> {
  let cursor: string | undefined;
  do {
    const page = await readPage(cursor);
    yield* page.items;
    cursor = page.nextCursor;
  } while (cursor);
}
