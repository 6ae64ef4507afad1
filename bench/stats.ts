// Order statistics for the bench scripts.

export const pct = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
};

export const median = (values: number[]) => pct(values, 50);

/** "min to max" of a list of figures, with the given number of decimals. */
export const spread = (values: number[], digits = 2) => `${Math.min(...values).toFixed(digits)} to ${Math.max(...values).toFixed(digits)}`;
