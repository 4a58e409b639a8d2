// htm bound to preact's h: the page's templates are tagged template literals, so no build step turns JSX into calls.
import { h } from 'preact';
import htm from 'htm';

export const html = htm.bind(h);
