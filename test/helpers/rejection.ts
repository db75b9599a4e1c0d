/** What a promise rejected with; fails the test when it resolved instead. */
export async function rejection<E = Error>(
  promise: Promise<unknown>,
  expected = 'expected a rejection',
): Promise<E> {
  try {
    await promise;
  } catch (err) {
    return err as E;
  }
  throw new Error(expected);
}
