/**
 * The regions a gateway, its rule files and the control plane serve. Its own module so that the rules, the settings
 * and the control plane share it without importing one another.
 */
export const REGIONS = ['us', 'eu'] as const;
export type Region = (typeof REGIONS)[number];
