import { Prisma } from '../generated/prisma/client.js';

/**
 * A unique constraint refused the write: P2002 from Prisma's queries, P2010 (23505) from raw SQL
 * through Prisma, 23505 from the drivers themselves (hand-written SQL on the database handle).
 */
export function isUniqueViolation(e: unknown): boolean {
  if ((e as { code?: unknown } | null)?.code === '23505') return true;
  if (!(e instanceof Prisma.PrismaClientKnownRequestError)) return false;
  if (e.code === 'P2002') return true;
  const cause = (e.meta as { driverAdapterError?: { cause?: { originalCode?: string } } } | undefined)?.driverAdapterError?.cause;
  return e.code === 'P2010' && cause?.originalCode === '23505';
}
