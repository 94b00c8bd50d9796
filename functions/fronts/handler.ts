/**
 * Placeholder for the fronts function (the fronts queue's batches and the scheduled fronts pass),
 * so the stack synthesizes until the worker is wired here. It takes no work: every queued item is
 * reported failed, to come back once the real handler is deployed.
 */
export async function handler(event: {
  Records?: readonly { messageId: string }[];
}): Promise<{ batchItemFailures: { itemIdentifier: string }[] }> {
  return {
    batchItemFailures: (event.Records ?? []).map((record) => ({
      itemIdentifier: record.messageId,
    })),
  };
}
