import * as actions from './actions';

export { actions };
export { apply } from './apply';
export { describe } from './describe';
export { events } from './events';
export { get } from './get';
export { report } from './report';
export { whatIf } from './whatif';
export { why } from './why';
