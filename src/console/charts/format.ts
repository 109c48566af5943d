/** Numbers as the charts say them: grouped by thousands (`12,345`), the same in every locale. */
export const formatCount = (n: number): string => Math.round(n).toLocaleString("en-US")
